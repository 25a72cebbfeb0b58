"""Held calls through the official Python SDK (`mcp` on PyPI, pinned in
scripts/interop-setup.sh) against the real `gatehouse mcp`, decided by the
client's user (elicitation) and by the site owner's queue (`gatehouse
approvals` in another process).

Usage: python_approvals.py GATEHOUSE_BIN SITE_DIR OTHER_SITE_DIR
Keys come from the environment, never argv:
  INTEROP_EDITOR_KEY / INTEROP_EDITOR_ID    editor, unrestricted
  INTEROP_APPROVE_KEY / INTEROP_APPROVE_ID  editor, --approve write
The script rewrites the site's [approvals] table between sessions (each
server reads it at start). Prints one line per check and exits non-zero on
the first failure.
"""

import asyncio
import json
import os
import subprocess
import sys
import time

from mcp import Client, StdioServerParameters, types

BIN, SITE, OTHER = sys.argv[1], sys.argv[2], sys.argv[3]
EDITOR_KEY, EDITOR_ID = os.environ["INTEROP_EDITOR_KEY"], os.environ["INTEROP_EDITOR_ID"]
APPROVE_KEY, APPROVE_ID = os.environ["INTEROP_APPROVE_KEY"], os.environ["INTEROP_APPROVE_ID"]
TOML = os.path.join(SITE, "gatehouse.toml")
ORIGINAL = open(TOML).read()


def check(cond, what):
    if not cond:
        print(f"FAIL {what}", flush=True)
        sys.exit(1)
    print(f"ok   {what}", flush=True)


def policy(text):
    with open(TOML, "w") as f:
        f.write(ORIGINAL + "\n[approvals]\n" + text + "\n")


def env_for(key=None):
    env = {k: v for k, v in os.environ.items() if not k.startswith("INTEROP_") and k != "GATEHOUSE_API_KEY"}
    env["GATEHOUSE_LOG"] = "warn"
    if key:
        env["GATEHOUSE_API_KEY"] = key
    return env


def params(actor_args=(), key=None):
    return StdioServerParameters(command=BIN, args=["--site", SITE, "mcp", *actor_args], env=env_for(key))


def cli(*args, site=SITE, key=None):
    out = subprocess.run([BIN, "--site", site, *args], capture_output=True, text=True, env=env_for(key))
    return out


def cli_json(*args):
    out = cli(*args, "--json")
    assert out.returncode == 0, out.stderr
    return json.loads(out.stdout)


def cli_code(*args, site=SITE, key=None):
    out = cli(*args, "--json", site=site, key=key)
    if out.returncode == 0:
        return "OK"
    return json.loads(out.stderr.strip().splitlines()[-1])["error"]["code"]


def error(result):
    assert result.is_error, f"expected a tool error, got {result}"
    return json.loads(result.content[0].text)["error"]


async def waiting_hold(caller, tool=None, timeout=15):
    """The id of the one waiting hold of `caller`, once it shows in the queue."""
    end = time.monotonic() + timeout
    while time.monotonic() < end:
        holds = [h for h in cli_json("approvals", "list")
                 if h["actor"] == caller and (tool is None or h["tool"] == tool)]
        if holds:
            assert len(holds) == 1, holds
            return holds[0]["id"]
        await asyncio.sleep(0.2)
    raise AssertionError(f"no hold of {caller} appeared")


def status(hold_id):
    return cli_json("approvals", "show", hold_id)["status"]


async def write(c, slug, title, body):
    r = await c.call_tool("content_write_draft", {"slug": slug, "title": title, "body": body})
    assert not r.is_error, r


async def entry_status(slug):
    async with Client(params(["--email", "admin@example.com"]), mode="legacy") as c:
        r = await c.call_tool("content_read", {"slug": slug})
        return error(r)["code"] if r.is_error else r.structured_content["status"]


async def client_decides():
    policy('effects = ["publish"]\ndecide = "client"\ntimeout_seconds = 3')
    asked = []
    not_queued = []
    gate = asyncio.Event()

    async def accept(ctx, p):
        asked.append(p.message)
        return types.ElicitResult(action="accept", content={})

    async def decline(ctx, p):
        asked.append(p.message)
        return types.ElicitResult(action="decline")

    async def never(ctx, p):
        asked.append(p.message)
        hold = p.message.rsplit("(id ", 1)[1].rstrip(").")
        not_queued.append(cli_code("approvals", "approve", hold))
        await gate.wait()
        return types.ElicitResult(action="accept", content={})

    caller = f"key:{EDITOR_ID}"
    async with Client(params(key=EDITOR_KEY), mode="legacy", elicitation_callback=accept) as c:
        await write(c, "spring-sale", "Spring sale", "Everything half price.")
        check(asked == [], "a draft write (effect write) is not held by a publish policy")
        r = await c.call_tool("content_publish", {"slug": "spring-sale"})
        check(not r.is_error and r.structured_content["status"] == "published", "accepted by the client's user: the publish ran")
        check(len(asked) == 1 and asked[0].startswith("Publish 'Spring sale' to the live site?"),
              f"the client's user was asked in words: {asked[-1]!r}")
    async with Client(params(key=EDITOR_KEY), mode="legacy", elicitation_callback=decline) as c:
        await write(c, "autumn", "Autumn", "Leaves.")
        e = error(await c.call_tool("content_publish", {"slug": "autumn"}))
        check(e["code"] == "APPROVAL_DECLINED", f"declined by the client's user: {e['code']}")
    check(await entry_status("autumn") == "draft", "a declined publish did not run")
    async with Client(params(key=EDITOR_KEY), mode="legacy", elicitation_callback=never) as c:
        started = time.monotonic()
        e = error(await c.call_tool("content_publish", {"slug": "autumn"}))
        took = time.monotonic() - started
        gate.set()
        check(e["code"] == "APPROVAL_TIMEOUT" and 2.5 < took < 10, f"no answer: refused at the timeout ({took:.1f} s): {e['code']}")
        check(not_queued == ["APPROVAL_NOT_QUEUED"], f"a call asked of the client's user is not the owner's to decide: {not_queued}")
    check(await entry_status("autumn") == "draft", "a timed-out publish did not run")
    holds = [h for h in cli_json("approvals", "list", "--all") if h["actor"] == caller]
    got = sorted(h["status"] for h in holds)
    check(got == ["approved", "declined", "timed_out"], f"each asked call is recorded with its end: {got}")
    check(all(h["decider"] == "client" for h in holds), "all three were asked of the client")
    check(cli_code("approvals", "approve", holds[0]["id"]) == "APPROVAL_ALREADY_DECIDED", "a decided client hold cannot be decided again from the queue")

    await modern_client_decides(caller, asked, accept, decline)


async def modern_client_decides(caller, asked, accept, decline):
    """2026-07-28 is stateless: the server answers `input_required` with the
    question, and the client's retry brings its user's answer back."""
    policy('effects = ["publish"]\ndecide = "client"\ntimeout_seconds = 3')
    yes = types.ElicitResult(action="accept", content={})

    async def late(ctx, p):
        asked.append(p.message)
        await asyncio.sleep(3.5)
        return yes

    before = len(asked)
    async with Client(params(key=EDITOR_KEY), mode="auto", elicitation_callback=accept) as c:
        await write(c, "modern-yes", "Modern yes", "y")
        r = await c.call_tool("content_publish", {"slug": "modern-yes"})
        check(not r.is_error and r.structured_content["status"] == "published",
              "[2026-07-28] accepted by the client's user through input_required: the publish ran")
        check(len(asked) == before + 1 and asked[-1].startswith("Publish 'Modern yes' to the live site?"),
              f"[2026-07-28] the client's user was asked in words: {asked[-1]!r}")
    async with Client(params(key=EDITOR_KEY), mode="auto", elicitation_callback=decline) as c:
        await write(c, "modern-no", "Modern no", "n")
        e = error(await c.call_tool("content_publish", {"slug": "modern-no"}))
        check(e["code"] == "APPROVAL_DECLINED", f"[2026-07-28] declined by the client's user: {e['code']}")
    async with Client(params(key=EDITOR_KEY), mode="auto", elicitation_callback=late) as c:
        e = error(await c.call_tool("content_publish", {"slug": "modern-no"}))
        check(e["code"] == "APPROVAL_TIMEOUT", f"[2026-07-28] an answer after the timeout is refused: {e['code']}")
    check(await entry_status("modern-no") == "draft", "[2026-07-28] neither the declined nor the late publish ran")
    holds = [h for h in cli_json("approvals", "list", "--all") if h["actor"] == caller and h["holder"] == "client"]
    got = sorted(h["status"] for h in holds)
    check(got == ["approved", "declined", "timed_out"] and all(h["decider"] == "client" for h in holds),
          f"[2026-07-28] each asked call is recorded with its end: {got}")

    # The state a retry carries back is checked, never trusted.
    policy('effects = ["publish"]\ndecide = "client"\ntimeout_seconds = 30')
    approved = [h["id"] for h in holds if h["status"] == "approved"][0]
    async with Client(params(key=EDITOR_KEY), mode="auto", elicitation_callback=accept) as c:
        e = error(await c.call_tool("content_publish", {"slug": "modern-yes"}, input_responses={"approval": yes},
                                    request_state=approved))
        check(e["code"] == "APPROVAL_ALREADY_DECIDED", f"[2026-07-28] a replayed answer approves nothing: {e['code']}")
        first = await c.session.call_tool("content_publish", {"slug": "modern-no"}, allow_input_required=True)
        check(first.result_type == "input_required" and "approval" in (first.input_requests or {}),
              "[2026-07-28] the first leg answers input_required with the question")
        state = first.request_state
        check(cli_code("approvals", "approve", state) == "APPROVAL_NOT_QUEUED",
              "[2026-07-28] a call asked of the client's user is not the owner's to decide")
        e = error(await c.call_tool("content_publish", {"slug": "spring-sale"}, input_responses={"approval": yes},
                                    request_state=state))
        check(e["code"] == "APPROVAL_STALE", f"[2026-07-28] an answer about another call runs nothing: {e['code']}")
    async with Client(params(key=APPROVE_KEY), mode="auto", elicitation_callback=accept) as other:
        e = error(await other.call_tool("content_publish", {"slug": "modern-no"}, input_responses={"approval": yes},
                                        request_state=state))
        check(e["code"] == "APPROVAL_NOT_FOUND", f"[2026-07-28] another caller cannot answer this caller's question: {e['code']}")
    check(cli_json("approvals", "show", state)["status"] == "waiting", "[2026-07-28] the refused answers ended nothing")
    check(await entry_status("modern-no") == "draft", "[2026-07-28] and ran nothing")
    async with Client(params(key=EDITOR_KEY), mode="auto", elicitation_callback=accept) as c:
        r = await c.call_tool("content_publish", {"slug": "modern-no"}, input_responses={"approval": yes},
                              request_state=state)
        check(not r.is_error and r.structured_content["status"] == "published",
              "[2026-07-28] the caller's own answer to its own question runs the call")

    # Without a way to ask its user, a 2026-07-28 client gets the owner's queue.
    async with Client(params(key=EDITOR_KEY), mode="auto") as c:
        await write(c, "modern-queue", "Modern queue", "q")
        call = asyncio.create_task(c.call_tool("content_publish", {"slug": "modern-queue"}))
        hold = await waiting_hold(caller)
        check(cli_json("approvals", "show", hold)["decider"] == "owner",
              "[2026-07-28] a client that cannot ask its user waits in the owner's queue")
        check(cli_code("approvals", "deny", hold) == "OK", "the owner denies it")
        check(error(await call)["code"] == "APPROVAL_DENIED", "and the modern client gets the refusal")


async def owner_decides():
    policy('effects = ["publish"]\ndecide = "owner"\ntimeout_seconds = 30')
    caller = f"key:{EDITOR_ID}"
    progress = []

    async def on_progress(value, total, message):
        progress.append((value, total, message))

    async with Client(params(key=EDITOR_KEY), mode="legacy") as c:
        await write(c, "queued", "Queued post", "first line\nsecond line")
        call = asyncio.create_task(c.call_tool("content_publish", {"slug": "queued"}, progress_callback=on_progress))
        hold = await waiting_hold(caller)
        shown = cli("approvals", "show", hold).stdout
        check("Publish 'Queued post' to the live site?" in shown and "+second line" in shown and "--- live site" in shown,
              "the owner is shown who, what and the diff against the live site")
        check(cli_code("approvals", "approve", hold, key=EDITOR_KEY) == "APPROVAL_DECIDER_INVALID",
              "the caller's own key cannot approve its call")
        check(cli_code("approvals", "approve", hold, "--email", "editor@example.com") == "APPROVAL_DECIDER_INVALID",
              "a non-admin user cannot approve")
        check(cli_code("approvals", "approve", hold, site=OTHER) == "APPROVAL_NOT_FOUND",
              "another site knows nothing of this hold")
        await asyncio.sleep(1.2)
        check(cli_code("approvals", "approve", hold) == "OK", "the owner approves from a terminal")
        check(cli_code("approvals", "approve", hold) == "APPROVAL_ALREADY_DECIDED", "approving twice is refused")
        r = await call
        check(not r.is_error and r.structured_content["status"] == "published", "the waiting client got the publish's result")
        check(len(progress) >= 1 and hold in (progress[-1][2] or ""), f"the client got progress while it waited ({len(progress)})")

        await write(c, "denied", "Denied post", "no")
        call = asyncio.create_task(c.call_tool("content_publish", {"slug": "denied"}))
        hold = await waiting_hold(caller)
        check(cli_code("approvals", "deny", hold) == "OK", "the owner denies")
        e = error(await call)
        check(e["code"] == "APPROVAL_DENIED" and "cli" in e["message"], f"denied: {e['code']} ({e['message']})")
    check(await entry_status("denied") == "draft", "a denied publish did not run")

    # The approved call runs only what was shown: the entry changes after the hold.
    async with Client(params(key=EDITOR_KEY), mode="legacy") as c:
        await write(c, "stale", "Stale post", "as shown")
        call = asyncio.create_task(c.call_tool("content_publish", {"slug": "stale"}))
        hold = await waiting_hold(caller)
        async with Client(params(["--email", "editor@example.com"]), mode="legacy") as other:
            await write(other, "stale", "Stale post", "swapped after the owner looked")
        check(cli_code("approvals", "approve", hold) == "OK", "the owner approves what was shown")
        e = error(await call)
        check(e["code"] == "APPROVAL_STALE", f"the entry changed since: the approved call is refused: {e['code']}")
    check(await entry_status("stale") == "draft", "the swapped text was not published")

    # A user cannot decide its own call, even as an admin.
    async with Client(params(["--email", "admin@example.com"]), mode="legacy") as c:
        await write(c, "own", "Own post", "mine")
        call = asyncio.create_task(c.call_tool("content_publish", {"slug": "own"}))
        hold = await waiting_hold("user:admin@example.com")
        check(cli_code("approvals", "approve", hold, "--email", "admin@example.com") == "APPROVAL_SELF_DECISION",
              "an admin cannot approve its own held call")
        check(cli_code("approvals", "deny", hold) == "OK", "the owner denies it")
        check(error(await call)["code"] == "APPROVAL_DENIED", "and the admin's call is refused")

    # A key's own approval list holds what the site's policy does not.
    async with Client(params(key=APPROVE_KEY), mode="auto") as c:
        call = asyncio.create_task(c.call_tool("content_write_draft", {"slug": "doomed", "title": "Doomed", "body": "x"}))
        hold = await waiting_hold(f"key:{APPROVE_ID}", "content_write_draft")
        shown = cli_json("approvals", "show", hold)
        check("+x" in shown["diff"] and shown["summary"] == "Save a draft of 'Doomed' (doomed)?", "a held write shows the new entry as a diff")
        check(cli_code("approvals", "deny", hold) == "OK", "the owner denies the key's write")
        check(error(await call)["code"] == "APPROVAL_DENIED", "the key's held write is refused")
    check(await entry_status("doomed") == "CONTENT_NOT_FOUND", "the denied write did not run")

    policy('effects = ["publish"]\ndecide = "owner"\ntimeout_seconds = 2')
    async with Client(params(key=EDITOR_KEY), mode="legacy") as c:
        e = error(await c.call_tool("content_publish", {"slug": "denied"}))
        check(e["code"] == "APPROVAL_TIMEOUT", f"nobody decided in time: {e['code']}")
    last = [h for h in cli_json("approvals", "list", "--all") if h["actor"] == caller][0]
    check(last["status"] == "timed_out" and last["decided_by"] == "gatehouse", "the timeout is recorded as the server's")
    check(cli_code("approvals", "approve", last["id"]) == "APPROVAL_ALREADY_DECIDED", "a timed-out hold cannot be approved later")


def raw_server(key):
    proc = subprocess.Popen([BIN, "--site", SITE, "mcp"], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                            env=env_for(key))

    def send(msg):
        proc.stdin.write((json.dumps(msg) + "\n").encode())
        proc.stdin.flush()

    send({"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {
        "protocolVersion": "2025-11-25", "clientInfo": {"name": "raw", "version": "0"},
        "capabilities": {"elicitation": {"form": {}}}}})
    assert json.loads(proc.stdout.readline())["id"] == 0
    send({"jsonrpc": "2.0", "method": "notifications/initialized"})
    return proc, send


async def forged_and_killed():
    policy('effects = ["publish"]\ndecide = "owner"\ntimeout_seconds = 60')
    caller = f"key:{EDITOR_ID}"
    async with Client(params(key=EDITOR_KEY), mode="legacy") as c:
        for slug in ("forged", "killed-a", "killed-b"):
            await write(c, slug, slug, "x")

    # A client that answers a question nobody asked approves nothing.
    proc, send = raw_server(EDITOR_KEY)
    send({"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": {"name": "content_publish", "arguments": {"slug": "forged"}}})
    hold = await waiting_hold(caller)
    for fake in ("gatehouse-1", "gatehouse-0", 1, hold):
        send({"jsonrpc": "2.0", "id": fake, "result": {"action": "accept", "content": {}}})
    await asyncio.sleep(1.0)
    check(status(hold) == "waiting", "forged elicitation answers from the caller approve nothing")
    check(cli_code("approvals", "deny", hold) == "OK", "the owner denies the forged call")
    reply = json.loads(proc.stdout.readline())
    check(reply["id"] == 1 and "APPROVAL_DENIED" in reply["result"]["content"][0]["text"], "the raw client got the refusal")
    proc.stdin.close()
    proc.wait(timeout=10)

    # Kill the server while two calls wait: both are recorded as not run.
    proc, send = raw_server(EDITOR_KEY)
    send({"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": {"name": "content_publish", "arguments": {"slug": "killed-a"}}})
    first = await waiting_hold(caller)
    send({"jsonrpc": "2.0", "id": 2, "method": "tools/call", "params": {"name": "content_publish", "arguments": {"slug": "killed-b"}}})
    end = time.monotonic() + 10
    while len([h for h in cli_json("approvals", "list") if h["actor"] == caller]) < 2 and time.monotonic() < end:
        await asyncio.sleep(0.2)
    second = [h["id"] for h in cli_json("approvals", "list") if h["actor"] == caller and h["id"] != first][0]
    proc.kill()
    proc.wait()
    check(status(first) == "waiting", "right after the kill the hold still reads waiting")
    await asyncio.sleep(11)
    check(cli_code("approvals", "approve", first) == "APPROVAL_HOLDER_GONE", "approving a call whose server is gone is a clear error")
    check(status(first) == "abandoned", "and that call is recorded as not run")
    # The next server's start records the other one.
    async with Client(params(key=EDITOR_KEY), mode="legacy") as c:
        await c.list_tools()
    check(status(second) == "abandoned", "the next server start records the other held call as not run")
    check(await entry_status("killed-a") == "draft" and await entry_status("killed-b") == "draft",
          "neither killed call ever ran")

    # A decision after a hold's timeout, when no server was there to end it.
    policy('effects = ["publish"]\ndecide = "owner"\ntimeout_seconds = 2')
    proc, send = raw_server(EDITOR_KEY)
    send({"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": {"name": "content_publish", "arguments": {"slug": "killed-a"}}})
    expired = await waiting_hold(caller)
    proc.kill()
    proc.wait()
    await asyncio.sleep(2.5)
    check(cli_code("approvals", "approve", expired) == "APPROVAL_EXPIRED", "approving a hold past its timeout is refused")
    check(status(expired) == "timed_out", "and the hold is recorded as timed out, not run")
    check(await entry_status("killed-a") == "draft", "the expired call never ran")


async def main():
    await client_decides()
    await owner_decides()
    await forged_and_killed()
    with open(TOML, "w") as f:
        f.write(ORIGINAL)


asyncio.run(main())

"""Held calls over `gatehouse serve` (Streamable HTTP, stateless) with the
official Python SDK: the same hold as stdio. A 2026-07-28 client that can ask
its user is asked through `input_required` (accepted, and declined); a
handshake-era client over stateless HTTP has no session to be asked on, and
a client without an elicitation callback cannot ask: both wait in the owner's
queue, with progress on the call's event stream.

Usage: python_approvals_http.py GATEHOUSE_BIN SITE_DIR URL
The site's [approvals] policy holds publishes (decide = "client"). The key
comes from the environment:
INTEROP_EDITOR_KEY / INTEROP_EDITOR_ID. Prints one line per check and exits
non-zero on the first failure.
"""

import asyncio
import json
import os
import subprocess
import sys
import time

from mcp import Client, types
from mcp.client.streamable_http import streamable_http_client
from mcp.shared._httpx_utils import create_mcp_http_client

BIN, SITE, URL = sys.argv[1], sys.argv[2], sys.argv[3]
KEY, KEY_ID = os.environ["INTEROP_EDITOR_KEY"], os.environ["INTEROP_EDITOR_ID"]


def check(cond, what):
    if not cond:
        print(f"FAIL {what}", flush=True)
        sys.exit(1)
    print(f"ok   {what}", flush=True)


def client(mode, **kw):
    transport = streamable_http_client(URL, http_client=create_mcp_http_client(headers={"Authorization": f"Bearer {KEY}"}))
    return Client(transport, mode=mode, **kw)


def cli(*args):
    env = {k: v for k, v in os.environ.items() if not k.startswith("INTEROP_")}
    return subprocess.run([BIN, "--site", SITE, *args, "--json"], capture_output=True, text=True, env=env)


async def waiting_hold(timeout=15):
    end = time.monotonic() + timeout
    while time.monotonic() < end:
        out = cli("approvals", "list")
        holds = [h for h in json.loads(out.stdout) if h["actor"] == f"key:{KEY_ID}"]
        if holds:
            return holds[0]
        await asyncio.sleep(0.2)
    raise AssertionError("no hold appeared")


def error(result):
    assert result.is_error, f"expected a tool error, got {result}"
    return json.loads(result.content[0].text)["error"]


async def main():
    asked = []
    progress = []

    async def accept(ctx, p):
        asked.append(p.message)
        return types.ElicitResult(action="accept", content={})

    async def decline(ctx, p):
        asked.append(p.message)
        return types.ElicitResult(action="decline")

    async def on_progress(value, total, message):
        progress.append(message)

    # Asked of the client's user through input_required: no queue involved.
    for callback, slug in ((accept, "http-modern-yes"), (decline, "http-modern-no")):
        async with client("auto", elicitation_callback=callback) as c:
            r = await c.call_tool("content_write_draft", {"slug": slug, "title": slug, "body": "b"})
            check(not r.is_error, f"[{slug}] a draft write is not held")
            r = await c.call_tool("content_publish", {"slug": slug})
            if callback is accept:
                check(not r.is_error and r.structured_content["status"] == "published",
                      f"[{slug}] the 2026-07-28 client's user accepted through input_required: the publish ran")
            else:
                check(error(r)["code"] == "APPROVAL_DECLINED", f"[{slug}] declined by the client's user")
    check(len(asked) == 2 and all(m.startswith("Publish 'http-modern-") for m in asked),
          f"each 2026-07-28 call asked its client's user once: {asked}")
    check(json.loads(cli("approvals", "list").stdout) == [], "nothing waited in the owner's queue")

    # Not askable: a handshake-era client (no session over stateless HTTP),
    # and a 2026-07-28 client without an elicitation callback.
    for mode, decision, callback in (("legacy", "approve", accept), ("auto", "deny", None)):
        slug = f"http-{mode}"
        kw = {"elicitation_callback": callback} if callback else {}
        async with client(mode, **kw) as c:
            r = await c.call_tool("content_write_draft", {"slug": slug, "title": f"Over HTTP {mode}", "body": "b"})
            check(not r.is_error, f"[{mode}] a draft write is not held")
            call = asyncio.create_task(c.call_tool("content_publish", {"slug": slug}, progress_callback=on_progress))
            hold = await waiting_hold()
            check(hold["decider"] == "owner" and hold["summary"] == f"Publish 'Over HTTP {mode}' to the live site?",
                  f"[{mode}] the held call waits in the owner's queue")
            await asyncio.sleep(1.2)
            check(cli("approvals", decision, hold["id"]).returncode == 0, f"[{mode}] the owner decides: {decision}")
            r = await call
            if decision == "approve":
                check(not r.is_error and r.structured_content["status"] == "published", f"[{mode}] the approved publish ran")
            else:
                check(error(r)["code"] == "APPROVAL_DENIED", f"[{mode}] the denied publish is refused")
    check(len(asked) == 2, "no client user was asked over the handshake era's stateless HTTP")
    check(len(progress) >= 1 and all("gatehouse approvals approve hold_" in m for m in progress),
          f"progress reached the client on the call's event stream ({len(progress)})")


asyncio.run(main())

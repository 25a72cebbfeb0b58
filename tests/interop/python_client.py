"""Drive `gatehouse mcp` with the official Python SDK (`mcp` on PyPI, pinned in
scripts/interop-setup.sh), in both eras: `mode="auto"` probes server/discover and
stays on 2026-07-28; `mode="legacy"` makes the initialize handshake.

Usage: python_client.py GATEHOUSE_BIN SITE_DIR
Keys come from the environment, never argv: INTEROP_VIEWER_KEY, and per mode
INTEROP_REVOKE_KEY_<MODE> / INTEROP_REVOKE_ID_<MODE> (a key this script revokes
mid-session). Prints one line per check and exits non-zero on the first failure.
"""

import asyncio
import json
import os
import subprocess
import sys

from mcp import Client, StdioServerParameters

BIN, SITE = sys.argv[1], sys.argv[2]

PUBLIC = {"content_list", "content_read", "content_search"}
VIEWER = PUBLIC | {"media_list", "media_read", "http_fetch"}
# Site config is for editors and admins (docs/permissions.md).
EDITOR = VIEWER | {"content_write_draft", "media_write", "content_publish", "site_config_read"}


def params(actor_args, key=None):
    env = {"GATEHOUSE_LOG": "warn"}
    if key:
        env["GATEHOUSE_API_KEY"] = key
    return StdioServerParameters(command=BIN, args=["--site", SITE, "mcp", *actor_args], env=env)


def error_code(result):
    assert result.is_error, f"expected a tool error, got {result}"
    return json.loads(result.content[0].text)["error"]["code"]


def check(cond, what):
    if not cond:
        print(f"FAIL {what}", flush=True)
        sys.exit(1)
    print(f"ok   {what}", flush=True)


async def tools(client):
    return {t.name for t in (await client.list_tools()).tools}


async def run(mode):
    expect_version = "2026-07-28" if mode == "auto" else "2025-11-25"

    async with Client(params([]), mode=mode) as c:
        check(c.protocol_version == expect_version, f"[{mode}] public negotiated {c.protocol_version}")
        check(await tools(c) == PUBLIC, f"[{mode}] public sees only published-content reads")
        r = await c.call_tool("content_read", {"slug": "welcome"})
        check(not r.is_error and r.structured_content["slug"] == "welcome", f"[{mode}] public reads a published entry")
        check(error_code(await c.call_tool("media_list", {})) == "PERMISSION_DENIED", f"[{mode}] public media_list refused")

    async with Client(params(["--role", "viewer"]), mode=mode) as c:
        check(await tools(c) == VIEWER, f"[{mode}] synthetic viewer manifest")
        r = await c.call_tool("content_publish", {"slug": "roadmap-draft"})
        check(error_code(r) == "PERMISSION_DENIED", f"[{mode}] viewer content_publish refused by the permission layer")
        r = await c.call_tool("media_read", {"filename": "pixel.png"})
        check(not r.is_error and r.structured_content["mime_type"] == "image/png", f"[{mode}] viewer reads media")

    async with Client(params(["--email", "editor@example.com"]), mode=mode) as c:
        check(await tools(c) == EDITOR, f"[{mode}] user editor manifest")
        slug = f"py-{mode}"
        r = await c.call_tool("content_write_draft", {"slug": slug, "title": "From Python", "body": f"written by the python sdk in {mode} mode"})
        check(not r.is_error and r.structured_content["status"] == "draft", f"[{mode}] editor writes a draft")
        r = await c.call_tool("content_search", {"query": f"python {mode}"})
        check(not r.is_error and [e["slug"] for e in r.structured_content["entries"]] == [slug], f"[{mode}] the draft is found at once")
        r = await c.call_tool("content_publish", {"slug": slug})
        check(not r.is_error and r.structured_content["status"] == "published", f"[{mode}] editor publishes")

    async with Client(params([], os.environ["INTEROP_VIEWER_KEY"]), mode=mode) as c:
        check(await tools(c) == VIEWER, f"[{mode}] API key (viewer) manifest")

    key = os.environ[f"INTEROP_REVOKE_KEY_{mode.upper()}"]
    key_id = os.environ[f"INTEROP_REVOKE_ID_{mode.upper()}"]
    async with Client(params([], key), mode=mode) as c:
        r = await c.call_tool("content_list", {})
        check(not r.is_error, f"[{mode}] key works before revocation")
        subprocess.run([BIN, "--site", SITE, "keys", "revoke", key_id], check=True, capture_output=True)
        r = await c.call_tool("content_list", {})
        check(error_code(r) == "ACTOR_API_KEY_INVALID", f"[{mode}] key revoked mid-session is refused on the next call")


async def main():
    for mode in ("auto", "legacy"):
        await run(mode)
    print("python interop: all checks passed", flush=True)


asyncio.run(main())

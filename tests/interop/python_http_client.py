"""Drive `gatehouse serve` (Streamable HTTP) with the official Python SDK in both
eras: `mode="auto"` probes server/discover and stays on 2026-07-28; `mode="legacy"`
makes the initialize handshake, per request on a stateless server.

Usage: python_http_client.py GATEHOUSE_BIN SITE_DIR URL
Keys come from the environment, never argv: INTEROP_VIEWER_KEY, INTEROP_EDITOR_KEY,
and per mode INTEROP_REVOKE_KEY_<MODE> / INTEROP_REVOKE_ID_<MODE> (revoked by this
script while its client is connected). Prints one line per check and exits non-zero
on the first failure.
"""

import asyncio
import json
import os
import subprocess
import sys

from mcp import Client
from mcp.client.streamable_http import streamable_http_client
from mcp.shared._httpx_utils import create_mcp_http_client

BIN, SITE, URL = sys.argv[1], sys.argv[2], sys.argv[3]

PUBLIC = {"content_list", "content_read", "content_search"}
VIEWER = PUBLIC | {"media_list", "media_read", "http_fetch"}
EDITOR = VIEWER | {"content_write_draft", "media_write", "content_publish", "site_config_read"}


def client(mode, key=None):
    headers = {"Authorization": f"Bearer {key}"} if key else {}
    transport = streamable_http_client(URL, http_client=create_mcp_http_client(headers=headers))
    return Client(transport, mode=mode)


def error_code(result):
    assert result.is_error, f"expected a tool error, got {result}"
    return json.loads(result.content[0].text)["error"]["code"]


def check(cond, what):
    if not cond:
        print(f"FAIL {what}", flush=True)
        sys.exit(1)
    print(f"ok   {what}", flush=True)


async def tools(c):
    return {t.name for t in (await c.list_tools()).tools}


async def run(mode):
    expect_version = "2026-07-28" if mode == "auto" else "2025-11-25"

    async with client(mode) as c:
        check(c.protocol_version == expect_version, f"[{mode}] public negotiated {c.protocol_version}")
        check(await tools(c) == PUBLIC, f"[{mode}] public sees only published-content reads")
        r = await c.call_tool("content_read", {"slug": "welcome"})
        check(not r.is_error and r.structured_content["slug"] == "welcome", f"[{mode}] public reads a published entry")
        check(error_code(await c.call_tool("media_list", {})) == "PERMISSION_DENIED", f"[{mode}] public media_list refused")

    async with client(mode, os.environ["INTEROP_VIEWER_KEY"]) as c:
        check(await tools(c) == VIEWER, f"[{mode}] viewer key manifest")
        r = await c.call_tool("content_publish", {"slug": "roadmap-draft"})
        check(error_code(r) == "PERMISSION_DENIED", f"[{mode}] viewer content_publish refused by the permission layer")

    async with client(mode, os.environ["INTEROP_EDITOR_KEY"]) as c:
        check(await tools(c) == EDITOR, f"[{mode}] editor key manifest: the gate differs from public's")
        slug = f"py-http-{mode}"
        r = await c.call_tool("content_write_draft", {"slug": slug, "title": "Over HTTP", "body": f"written over http in {mode} mode"})
        check(not r.is_error and r.structured_content["status"] == "draft", f"[{mode}] editor writes a draft")
        r = await c.call_tool("content_publish", {"slug": slug})
        check(not r.is_error and r.structured_content["status"] == "published", f"[{mode}] editor publishes")

    key = os.environ[f"INTEROP_REVOKE_KEY_{mode.upper()}"]
    key_id = os.environ[f"INTEROP_REVOKE_ID_{mode.upper()}"]
    async with client(mode, key) as c:
        r = await c.call_tool("content_list", {})
        check(not r.is_error, f"[{mode}] key works before revocation")
        subprocess.run([BIN, "--site", SITE, "keys", "revoke", key_id], check=True, capture_output=True)
        try:
            r = await c.call_tool("content_list", {})
            refused = r.is_error
        except Exception as e:  # the SDK raises on the 401
            refused = "401" in str(e) or "revoked" in str(e) or "Unauthorized" in str(e)
            if not refused:
                print(f"     unexpected error: {e!r}", flush=True)
        check(refused, f"[{mode}] revoked key refused on its next request")


async def main():
    for mode in ("auto", "legacy"):
        await run(mode)


asyncio.run(main())

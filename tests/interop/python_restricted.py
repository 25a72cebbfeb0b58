"""Restricted keys through the official Python SDK (`mcp` on PyPI, pinned in
scripts/interop-setup.sh) against the real `gatehouse mcp`, in both eras, or
against `gatehouse serve` (Streamable HTTP, the key as a bearer token) when
a URL is given.

Usage: python_restricted.py GATEHOUSE_BIN SITE_DIR [URL]
Keys come from the environment, never argv:
  INTEROP_TOOLS_KEY     editor, --tools content_read,content_search
  INTEROP_READONLY_KEY  editor, --read-only
  INTEROP_SCOPED_KEY    editor, --content 'blog-*'
  INTEROP_RATE_KEY      viewer, --rate 3/min (over HTTP one server keeps
                        the bucket across eras: INTEROP_RATE_KEY_LEGACY is
                        a second such key for the second era)
  INTEROP_LIVE_KEY / INTEROP_LIVE_ID  editor, restricted by this script mid-session
Prints one line per check and exits non-zero on the first failure.
"""

import asyncio
import json
import os
import subprocess
import sys

from mcp import Client, StdioServerParameters
from mcp.client.streamable_http import streamable_http_client
from mcp.shared._httpx_utils import create_mcp_http_client

BIN, SITE = sys.argv[1], sys.argv[2]
URL = sys.argv[3] if len(sys.argv) > 3 else None

EDITOR_READS = {"content_list", "content_read", "content_search", "media_list", "media_read", "http_fetch", "site_config_read"}


def params(actor_args, key=None):
    env = {"GATEHOUSE_LOG": "warn"}
    if key:
        env["GATEHOUSE_API_KEY"] = key
    return StdioServerParameters(command=BIN, args=["--site", SITE, "mcp", *actor_args], env=env)


def keyed(key, mode):
    """A client that calls with `key`: over stdio, or over HTTP when a URL is given."""
    if URL is None:
        return Client(params([], key), mode=mode)
    http = create_mcp_http_client(headers={"Authorization": f"Bearer {key}"})
    return Client(streamable_http_client(URL, http_client=http), mode=mode)


def error(result):
    assert result.is_error, f"expected a tool error, got {result}"
    return json.loads(result.content[0].text)["error"]


def check(cond, what):
    if not cond:
        print(f"FAIL {what}", flush=True)
        sys.exit(1)
    print(f"ok   {what}", flush=True)


async def tools(client):
    return {t.name for t in (await client.list_tools()).tools}


async def seed():
    """Entries in and out of the scope, all saying "okapi"; the out-of-scope
    ones rank higher. blog-old is a redirect to private-moved."""
    async with Client(params(["--email", "editor@example.com"]), mode="legacy") as c:
        async def w(slug, title, body, new_slug=None):
            args = {"slug": slug, "title": title, "body": body}
            if new_slug:
                args["new_slug"] = new_slug
            r = await c.call_tool("content_write_draft", args)
            assert not r.is_error, r

        await w("blog-spring", "Spring", "okapi spring sale")
        await w("blog-notes", "Notes", "okapi notes")
        await w("private-launch", "Okapi okapi", "okapi okapi okapi secret launch")
        await w("blog-old", "Moved", "okapi okapi moved")
        await c.call_tool("content_publish", {"slug": "blog-old"})
        await w("blog-old", "Moved", "okapi okapi moved", new_slug="private-moved")


async def run(mode):
    via = "http" if URL else "stdio"
    async with keyed(os.environ["INTEROP_TOOLS_KEY"], mode) as c:
        check(await tools(c) == {"content_read", "content_search"}, f"[{via} {mode}] allowlist key sees only its tools")
        r = await c.call_tool("content_read", {"slug": "welcome"})
        check(not r.is_error, f"[{via} {mode}] allowlist key calls an allowed tool")
        for tool, args in (("content_list", {}), ("content_publish", {"slug": "blog-notes"})):
            e = error(await c.call_tool(tool, args))
            check(e["code"] == "KEY_TOOL_NOT_ALLOWED", f"[{via} {mode}] allowlist key refused {tool}: {e['code']}")

    async with keyed(os.environ["INTEROP_READONLY_KEY"], mode) as c:
        got = await tools(c)
        check(got == EDITOR_READS, f"[{via} {mode}] read-only editor key sees the read tools only: {sorted(got)}")
        listed = (await c.list_tools()).tools
        check(all(t.annotations.read_only_hint for t in listed), f"[{via} {mode}] every listed tool is annotated read-only")
        e = error(await c.call_tool("content_write_draft", {"slug": "ro-x", "title": "t", "body": "b"}))
        check(e["code"] == "KEY_READ_ONLY", f"[{via} {mode}] read-only key refused a write: {e['code']}")

    async with keyed(os.environ["INTEROP_SCOPED_KEY"], mode) as c:
        got = await tools(c)
        check(not any(t.startswith("media_") for t in got) and "content_write_draft" in got,
              f"[{via} {mode}] scoped key: no media tools, content tools kept: {sorted(got)}")
        r = await c.call_tool("content_list", {"limit": 500})
        listed = [e["slug"] for e in r.structured_content["entries"]]
        check(sorted(listed) == ["blog-notes", "blog-spring"], f"[{via} {mode}] scoped list holds only in-scope entries: {listed}")
        pages = []
        for offset in range(3):
            r = await c.call_tool("content_list", {"limit": 1, "offset": offset})
            pages.append(len(r.structured_content["entries"]))
        check(pages == [1, 1, 0], f"[{via} {mode}] scoped pages count in-scope entries only: {pages}")
        r = await c.call_tool("content_search", {"query": "okapi", "limit": 100})
        hits = [e["slug"] for e in r.structured_content["entries"]]
        check(sorted(hits) == ["blog-notes", "blog-spring"], f"[{via} {mode}] scoped search hits only in-scope entries: {hits}")
        r = await c.call_tool("content_search", {"query": "okapi", "limit": 1})
        hits = [e["slug"] for e in r.structured_content["entries"]]
        check(len(hits) == 1 and hits[0].startswith("blog-"), f"[{via} {mode}] limit 1 still finds an in-scope hit: {hits}")
        r = await c.call_tool("content_search", {"query": "secret launch"})
        check(r.structured_content["entries"] == [], f"[{via} {mode}] an out-of-scope entry's words find nothing")
        e = error(await c.call_tool("content_read", {"slug": "blog-old"}))
        check(e["code"] == "CONTENT_NOT_FOUND" and "private" not in json.dumps(e),
              f"[{via} {mode}] an in-scope redirect to an out-of-scope entry reads as absent")
        e = error(await c.call_tool("content_read", {"slug": "private-launch"}))
        check(e["code"] == "KEY_SCOPE_CONTENT", f"[{via} {mode}] out-of-scope read refused: {e['code']}")
        e = error(await c.call_tool("content_write_draft", {"slug": "blog-notes", "title": "t", "body": "b", "new_slug": "private-notes"}))
        check(e["code"] == "KEY_SCOPE_CONTENT", f"[{via} {mode}] rename out of scope refused")
        e = error(await c.call_tool("media_read", {"filename": "pixel.png"}))
        check(e["code"] == "KEY_SCOPE_CONTENT", f"[{via} {mode}] media (not tied to an entry) refused under a content scope")

    rate_key = os.environ.get(f"INTEROP_RATE_KEY_{mode.upper()}", os.environ["INTEROP_RATE_KEY"])
    async with keyed(rate_key, mode) as c:
        for i in range(3):
            r = await c.call_tool("content_read", {"slug": "welcome"})
            check(not r.is_error, f"[{via} {mode}] rate-limited key call {i + 1} of 3 passes")
        e = error(await c.call_tool("content_read", {"slug": "welcome"}))
        retry = (e.get("detail") or {}).get("retry_after_ms", 0)
        check(e["code"] == "KEY_RATE_LIMITED" and retry > 0 and "retry in" in e.get("hint", ""),
              f"[{via} {mode}] the 4th call within a minute is refused with a retry hint ({retry} ms)")

    async with keyed(os.environ["INTEROP_LIVE_KEY"], mode) as c:
        before = await tools(c)
        check("content_publish" in before, f"[{via} {mode}] live key starts unrestricted")
        subprocess.run([BIN, "--site", SITE, "keys", "restrict", os.environ["INTEROP_LIVE_ID"], "--tools", "content_read"],
                       check=True, capture_output=True)
        check(await tools(c) == {"content_read"}, f"[{via} {mode}] a restriction set mid-session applies to the next list")
        e = error(await c.call_tool("content_publish", {"slug": "blog-notes"}))
        check(e["code"] == "KEY_TOOL_NOT_ALLOWED", f"[{via} {mode}] and to the next call")
        subprocess.run([BIN, "--site", SITE, "keys", "restrict", os.environ["INTEROP_LIVE_ID"], "--clear", "all"],
                       check=True, capture_output=True)
        check(await tools(c) == before, f"[{via} {mode}] clearing it gives the roles' tools back")


async def main():
    await seed()
    for mode in ("auto", "legacy"):
        await run(mode)
    print(f"python restricted interop ({'http' if URL else 'stdio'}): all checks passed", flush=True)


asyncio.run(main())

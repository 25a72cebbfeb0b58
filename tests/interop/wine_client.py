"""Drive the Windows build, `wine64 gatehouse.exe mcp`, with the official Python
SDK client (`mcp` on PyPI, pinned in scripts/interop-setup.sh) over stdio.

Usage: wine_client.py GATEHOUSE_EXE SITE_DIR (a Windows path, e.g. Z:\\tmp\\site)
The viewer key comes from INTEROP_VIEWER_KEY, never argv. Prints one line per
check and exits non-zero on the first failure.
"""

import asyncio
import os
import sys

from mcp import Client, StdioServerParameters

EXE, SITE = sys.argv[1], sys.argv[2]
VIEWER = {"content_list", "content_read", "content_search", "media_list", "media_read", "http_fetch"}


def check(cond, what):
    if not cond:
        print(f"FAIL {what}", flush=True)
        sys.exit(1)
    print(f"ok   {what}", flush=True)


def params(mode):
    env = {
        "GATEHOUSE_LOG": "warn",
        "GATEHOUSE_API_KEY": os.environ["INTEROP_VIEWER_KEY"],
        "GATEHOUSE_CONFIG_DIR": os.environ["GATEHOUSE_CONFIG_DIR"],
        "WINEPREFIX": os.environ["WINEPREFIX"],
        "WINEDEBUG": "-all",
        "WINEDLLOVERRIDES": os.environ.get("WINEDLLOVERRIDES", ""),
    }
    return StdioServerParameters(command=os.environ.get("WINE", "wine64"), args=[EXE, "--site", SITE, "mcp"], env=env)


async def run(mode):
    async with Client(params(mode), mode=mode) as c:
        check(c.protocol_version in ("2026-07-28", "2025-11-25"), f"[{mode}] negotiated {c.protocol_version}")
        names = {t.name for t in (await c.list_tools()).tools}
        check(names == VIEWER, f"[{mode}] a viewer sees the viewer's tools")
        r = await c.call_tool("content_read", {"slug": "welcome"})
        check(not r.is_error and r.structured_content["slug"] == "welcome", f"[{mode}] content_read welcome")


async def main():
    for mode in ("auto", "legacy"):
        await asyncio.wait_for(run(mode), 120)


asyncio.run(main())

"""Two held publishes through the official Python SDK (`mcp` on PyPI, pinned
in scripts/interop-setup.sh) against the real `gatehouse mcp`, for the
desktop's Approvals E2E: the site's [approvals] policy holds publishes for
the owner, and the test decides them in the app's window.

Usage: python_held_desktop.py GATEHOUSE_BIN SITE_DIR
The key comes from the environment (INTEROP_KEY), never argv. Prints
`held` once both calls were sent, then one JSON line per call's outcome
(`{"slug", "is_error", "code", "status"}`), and exits 0.
"""

import asyncio
import json
import os
import sys

from mcp import Client, StdioServerParameters

BIN, SITE = sys.argv[1], sys.argv[2]
KEY = os.environ["INTEROP_KEY"]
SLUGS = {"held-approve": "Approve me", "held-deny": "Deny me"}


def params():
    env = {k: v for k, v in os.environ.items() if not k.startswith("INTEROP_")}
    env["GATEHOUSE_LOG"] = "warn"
    env["GATEHOUSE_API_KEY"] = KEY
    return StdioServerParameters(command=BIN, args=["--site", SITE, "mcp"], env=env)


def outcome(slug, result):
    line = {"slug": slug, "is_error": bool(result.is_error), "code": None, "status": None}
    if result.is_error:
        line["code"] = json.loads(result.content[0].text)["error"]["code"]
    else:
        line["status"] = (result.structured_content or {}).get("status")
    return line


async def main():
    async with Client(params(), mode="legacy") as c:
        for slug, title in SLUGS.items():
            r = await c.call_tool("content_write_draft", {"slug": slug, "title": title, "body": f"{title}: new body"})
            assert not r.is_error, f"the draft write of {slug} was refused: {r}"
        calls = {slug: asyncio.create_task(c.call_tool("content_publish", {"slug": slug})) for slug in SLUGS}
        print("held", flush=True)
        for slug, call in calls.items():
            print(json.dumps(outcome(slug, await call)), flush=True)


asyncio.run(main())

"""Connect to `gatehouse serve --public-url` with the official Python SDK's
OAuthClientProvider, headless: discovery from the 401, dynamic registration,
authorize with PKCE, the consent form submitted as a browser would (the API
key pasted), the code exchange, MCP calls as the key's actor, a refresh, and
the grant revoked through the CLI.

With INTEROP_OAUTH_AS=EMAIL the person pastes no key: the consent page's
pairing code is approved through the CLI (`gatehouse oauth approve CODE --as
EMAIL`, an editor user), and the grant acts as that user.

With INTEROP_OAUTH_DOC_PORT, _CERT and _KEY set, the client identifies itself
by a client ID metadata document instead of registering: this script serves
the document over HTTPS on 127.0.0.1 at that port (the SDK takes only an
https URL) with that certificate, and passes its URL as client_metadata_url.

Usage: python_oauth_client.py GATEHOUSE_BIN SITE_DIR URL
The key to paste comes from the environment (INTEROP_OAUTH_KEY, an editor key),
never argv. Prints one line per check and exits non-zero on the first failure.
"""

import asyncio
import json
import os
import re
import ssl
import subprocess
import sys
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from urllib.parse import parse_qs, urlparse

import httpx2 as httpx
from mcp import Client
from mcp.client.auth import OAuthClientProvider, TokenStorage
from mcp.client.streamable_http import streamable_http_client
from mcp.shared._httpx_utils import create_mcp_http_client
from mcp.shared.auth import (
    AuthorizationCodeResult,
    OAuthClientInformationFull,
    OAuthClientMetadata,
    OAuthToken,
)

BIN, SITE, URL = sys.argv[1], sys.argv[2], sys.argv[3]
BASE = URL.rsplit("/mcp", 1)[0]
AS_USER = os.environ.get("INTEROP_OAUTH_AS")
KEY = None if AS_USER else os.environ["INTEROP_OAUTH_KEY"]
REDIRECT = "http://127.0.0.1:9/callback"
EDITOR = {
    "content_list", "content_read", "content_search", "media_list", "media_read", "http_fetch",
    "content_write_draft", "media_write", "content_publish", "site_config_read",
}


DOC_PORT = os.environ.get("INTEROP_OAUTH_DOC_PORT")
DOC_URL = f"https://127.0.0.1:{DOC_PORT}/client.json" if DOC_PORT else None
METADATA = {
    "client_name": "Python SDK interop",
    "redirect_uris": [REDIRECT],
    "grant_types": ["authorization_code", "refresh_token"],
    "response_types": ["code"],
    "token_endpoint_auth_method": "none",
}
doc_fetches = []


class Document(BaseHTTPRequestHandler):
    """The client's metadata document; counts fetches."""

    def do_GET(self):
        doc_fetches.append(self.path)
        if self.path != "/client.json":
            self.send_error(404)
            return
        body = json.dumps({"client_id": DOC_URL, **METADATA}).encode()
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *args):
        pass


def serve_document():
    server = ThreadingHTTPServer(("127.0.0.1", int(DOC_PORT)), Document)
    tls = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    tls.load_cert_chain(os.environ["INTEROP_OAUTH_DOC_CERT"], os.environ["INTEROP_OAUTH_DOC_KEY"])
    server.socket = tls.wrap_socket(server.socket, server_side=True)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    return server


def check(cond, what):
    if not cond:
        print(f"FAIL {what}", flush=True)
        sys.exit(1)
    print(f"ok   {what}", flush=True)


class Memory(TokenStorage):
    def __init__(self):
        self.tokens = None
        self.client = None

    async def get_tokens(self):
        return self.tokens

    async def set_tokens(self, tokens: OAuthToken):
        self.tokens = tokens

    async def get_client_info(self):
        return self.client

    async def set_client_info(self, info: OAuthClientInformationFull):
        self.client = info


answer = {}
consents = []


async def browser(url):
    """What the person's browser does: open the consent page, paste the key, allow."""
    consents.append(url)
    q = parse_qs(urlparse(url).query)
    check(q.get("code_challenge_method") == ["S256"], "the SDK asks with PKCE S256")
    check(q.get("resource") == [URL], "the SDK names this server as the resource")
    async with httpx.AsyncClient(follow_redirects=False) as b:
        page = await b.get(url)
        check(page.status_code == 200, "the consent page renders")
        csp = page.headers.get("content-security-policy", "")
        check("frame-ancestors 'none'" in csp and "script" not in csp, "the consent page refuses framing and runs no script")
        check(page.headers.get("x-frame-options") == "DENY", "X-Frame-Options: DENY")
        check("<script" not in page.text, "no script on the page")
        request = re.search(r'name="request" value="([^"]+)"', page.text).group(1)
        csrf = re.search(r'name="csrf" value="([^"]+)"', page.text).group(1)
        if AS_USER:
            form = {"request": request, "csrf": csrf, "decision": "pair"}
            r = await b.post(f"{BASE}/authorize", data=form, headers={"Origin": BASE})
            check(r.status_code == 200, "the page shows a pairing code")
            code = re.search(r'name="pair" value="([^"]+)"', r.text).group(1)
            check(f"--as EMAIL" in r.text, "the page names the command with --as")
            approved = subprocess.run([BIN, "--site", SITE, "oauth", "approve", code, "--as", AS_USER, "--yes", "--json"],
                                      capture_output=True, text=True)
            check(approved.returncode == 0, f"the admin approves as {AS_USER} ({approved.stderr.strip()})")
            check(json.loads(approved.stdout)["acts_as"] == {"kind": "user", "id": AS_USER}, "the approval names the user")
            form = {"request": request, "csrf": csrf, "decision": "paired", "pair": code}
        else:
            form = {"request": request, "csrf": csrf, "api_key": KEY, "decision": "approve"}
        r = await b.post(f"{BASE}/authorize", data=form, headers={"Origin": BASE})
        check(r.status_code == 303, f"the consent form redirects back ({r.status_code})")
        back = parse_qs(urlparse(r.headers["location"]).query)
        check(back["iss"] == [BASE], "the answer carries iss (RFC 9207)")
        answer.update(code=back["code"][0], state=back.get("state", [None])[0], iss=back["iss"][0])


async def callback():
    return AuthorizationCodeResult(code=answer["code"], state=answer["state"], iss=answer["iss"])


def provider(storage):
    meta = OAuthClientMetadata(**METADATA)
    return OAuthClientProvider(URL, meta, storage, redirect_handler=browser, callback_handler=callback,
                               client_metadata_url=DOC_URL)


def connect(auth):
    http = create_mcp_http_client(auth=auth)
    return Client(streamable_http_client(URL, http_client=http), mode="legacy")


async def main():
    doc_server = serve_document() if DOC_URL else None
    storage = Memory()
    auth = provider(storage)
    async with connect(auth) as c:
        tools = {t.name for t in (await c.list_tools()).tools}
        check(tools == EDITOR, f"the token sees the editor's tools ({sorted(tools ^ EDITOR)})")
        r = await c.call_tool("content_write_draft", {"slug": "oauth-note", "title": "Via OAuth", "body": "written with a token"})
        check(not r.is_error, "a write as the grant's actor")
    check(len(consents) == 1, "one consent for the session")
    if DOC_URL:
        check(storage.client is not None and storage.client.client_id == DOC_URL,
              "identified by its metadata document, not registered")
        check(doc_fetches == ["/client.json"], f"the server fetched the document once ({doc_fetches})")
    else:
        check(storage.client is not None and storage.client.client_id.startswith("gh_"), "registered dynamically")
    first = storage.tokens
    check(first.refresh_token is not None, "a refresh token was issued")

    # The access token runs out: the SDK refreshes, without a second consent.
    auth.context.token_expiry_time = time.time() - 1
    async with connect(auth) as c:
        r = await c.call_tool("content_read", {"slug": "oauth-note"})
        check(not r.is_error, "a call after the refresh")
    check(len(consents) == 1, "the refresh needed no consent")
    check(storage.tokens.refresh_token != first.refresh_token, "the refresh token rotated")

    # The admin revokes the grant: the token is refused at once.
    grants = subprocess.run([BIN, "--site", SITE, "oauth", "grants", "--json"], check=True, capture_output=True, text=True).stdout
    live = [g for g in json.loads(grants) if g["revoked_at"] is None]
    check(len(live) == 1 and live[0]["client_name"] == "Python SDK interop", "the grant is listed for the admin")
    if AS_USER:
        check(live[0]["acts_as"] == {"kind": "user", "id": AS_USER}, "the grant acts as the user")
    gid = live[0]["id"]
    subprocess.run([BIN, "--site", SITE, "oauth", "revoke", gid], check=True, capture_output=True)
    async with httpx.AsyncClient() as h:
        r = await h.post(URL, headers={"Authorization": f"Bearer {storage.tokens.access_token}",
                                       "Content-Type": "application/json", "Accept": "application/json, text/event-stream",
                                       "MCP-Protocol-Version": "2025-06-18"},
                         json={"jsonrpc": "2.0", "id": 1, "method": "tools/list"})
        check(r.status_code == 401 and "invalid_token" in r.headers.get("www-authenticate", ""),
              f"the revoked grant's token is refused ({r.status_code}, {r.headers.get('www-authenticate')!r}, {r.text[:200]!r})")
        r = await h.post(f"{BASE}/token", data={"grant_type": "refresh_token", "refresh_token": storage.tokens.refresh_token,
                                                  "client_id": storage.client.client_id, "resource": URL})
        check(r.status_code == 400 and r.json()["error"] == "invalid_grant", "its refresh token is refused")
    if doc_server:
        check(doc_fetches == ["/client.json"], f"one fetch for the whole flow, refresh included ({doc_fetches})")
        doc_server.shutdown()


asyncio.run(main())

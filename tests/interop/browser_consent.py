"""The consent page of `gatehouse serve --public-url` in a real browser engine
(WebKitGTK's MiniBrowser through WebKitWebDriver; run under Xvfb): it renders,
its form completes the flow back to the client's redirect URI (the CSRF cookie
and the CSP's form-action as a browser applies them), a cross-site form post
is refused, and a page on another origin cannot frame it.

Usage: browser_consent.py BASE_URL CLIENT_ID REDIRECT_PORT EVIL_PORT
The key to paste comes from the environment (INTEROP_OAUTH_KEY). Stdlib only:
WebDriver is JSON over HTTP. Prints one line per check, exits non-zero on the
first failure.
"""

import http.server
import json
import os
import socket
import subprocess
import sys
import threading
import time
import urllib.parse
import urllib.request

BASE, CLIENT_ID, REDIRECT_PORT, EVIL_PORT = sys.argv[1], sys.argv[2], int(sys.argv[3]), int(sys.argv[4])
KEY = os.environ["INTEROP_OAUTH_KEY"]
REDIRECT = f"http://127.0.0.1:{REDIRECT_PORT}/callback"
# `localhost` is another origin than the server's 127.0.0.1: a foreign site.
EVIL = f"http://localhost:{EVIL_PORT}"
BROWSER = "/usr/lib/x86_64-linux-gnu/webkit2gtk-4.1/MiniBrowser"
CHALLENGE = "E9Melhoa2OwvFrEMTJguCHaoeK1t8URWbuGJSstw-cM"


def check(cond, what):
    if not cond:
        print(f"FAIL {what}", flush=True)
        sys.exit(1)
    print(f"ok   {what}", flush=True)


def authorize_url(state):
    q = urllib.parse.urlencode({
        "response_type": "code", "client_id": CLIENT_ID, "redirect_uri": REDIRECT,
        "code_challenge": CHALLENGE, "code_challenge_method": "S256", "state": state,
        "scope": "content:read", "resource": f"{BASE}/mcp",
    })
    return f"{BASE}/authorize?{q}"


callbacks = []


class Pages(http.server.BaseHTTPRequestHandler):
    def log_message(self, *a):
        pass

    def do_GET(self):
        url = urllib.parse.urlparse(self.path)
        if url.path == "/callback":
            callbacks.append(dict(urllib.parse.parse_qsl(url.query)))
            body = b"<!doctype html><title>back</title><p id=back>back at the client</p>"
        elif url.path == "/frame":
            body = f'<!doctype html><title>framer</title><iframe id=f src="{authorize_url("framed")}"></iframe>'.encode()
        elif url.path == "/frame-control":
            # The same framing of a page that allows it: proves the check can see a framed page.
            body = f'<!doctype html><title>framer</title><iframe id=f src="{REDIRECT}?state=control"></iframe>'.encode()
        elif url.path == "/forge":
            # An auto-submitting cross-site form: what CSRF would look like.
            req = urllib.parse.parse_qs(url.query)
            body = f"""<!doctype html><title>forge</title>
<form id=x method=post action="{BASE}/authorize">
<input name=request value="{req['request'][0]}"><input name=csrf value="{req['csrf'][0]}">
<input name=api_key value="{KEY}"><input name=decision value=approve></form>
<script>document.getElementById('x').submit()</script>""".encode()
        else:
            self.send_response(404)
            self.end_headers()
            return
        self.send_response(200)
        self.send_header("Content-Type", "text/html")
        self.end_headers()
        self.wfile.write(body)


for port in (REDIRECT_PORT, EVIL_PORT):
    srv = http.server.ThreadingHTTPServer(("127.0.0.1", port), Pages)
    threading.Thread(target=srv.serve_forever, daemon=True).start()


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


wd_port = free_port()
driver = subprocess.Popen(["WebKitWebDriver", f"--port={wd_port}"], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
WD = f"http://127.0.0.1:{wd_port}"


def wd(method, path, body=None):
    data = json.dumps(body).encode() if body is not None else None
    req = urllib.request.Request(WD + path, data=data, method=method, headers={"Content-Type": "application/json"})
    try:
        with urllib.request.urlopen(req, timeout=60) as r:
            return json.load(r)["value"]
    except urllib.error.HTTPError as e:
        return {"error": json.load(e)}


def wait_for(fn, what, patience=20):
    end = time.time() + patience
    while time.time() < end:
        v = fn()
        if v:
            return v
        time.sleep(0.2)
    try:
        print(f"     (the browser is at {wd('GET', f'{S}/url')}: {str(wd('GET', f'{S}/source'))[:600]})", flush=True)
    except Exception:
        pass
    check(False, what)


try:
    for _ in range(100):
        try:
            urllib.request.urlopen(WD + "/status", timeout=1)
            break
        except Exception:
            time.sleep(0.1)
    session = wd("POST", "/session", {"capabilities": {"alwaysMatch": {
        "webkitgtk:browserOptions": {"binary": BROWSER, "args": ["--automation"]}}}})
    sid = session["sessionId"]
    S = f"/session/{sid}"
    source = lambda: wd("GET", f"{S}/source")

    # 1. The page renders and its form completes the flow.
    wd("POST", f"{S}/url", {"url": authorize_url("real")})
    html = wait_for(lambda: (s := source()) and "Connect" in s and s, "the consent page renders")
    check('name="api_key"' in html and "<script" not in html, "a form, no script")
    field = wd("POST", f"{S}/element", {"using": "css selector", "value": "#api_key"})
    el = list(field.values())[0]
    wd("POST", f"{S}/element/{el}/value", {"text": KEY})
    allow = list(wd("POST", f"{S}/element", {"using": "css selector", "value": "button[value=approve]"}).values())[0]
    wd("POST", f"{S}/element/{allow}/click", {})
    got = wait_for(lambda: [c for c in callbacks if c.get("state") == "real"], "the browser comes back to the client")
    check("code" in got[0] and got[0].get("iss") == BASE, "with a code and iss")

    # 2. A cross-site post (auto-submitted from another origin) is refused.
    wd("POST", f"{S}/url", {"url": authorize_url("forged")})
    html = wait_for(lambda: (s := source()) and 'name="csrf"' in s and s, "a second consent page")
    val = lambda n: html.split(f'name="{n}" value="')[1].split('"')[0]
    forge = f"{EVIL}/forge?" + urllib.parse.urlencode({"request": val("request"), "csrf": val("csrf")})
    wd("POST", f"{S}/url", {"url": forge})
    refused = wait_for(lambda: (s := source()) and "cannot go on" in s and s, "the forged post gets the refusal page")
    check("own consent page" in refused, "refused for its origin")
    check(not [c for c in callbacks if c.get("state") == "forged"], "no code went to the client")

    # 3. Another origin cannot frame the page (a frameable page, same frame: it shows).
    def framed(path):
        wd("POST", f"{S}/frame", {"id": None})
        wd("POST", f"{S}/url", {"url": f"{EVIL}{path}"})
        wait_for(lambda: (s := source()) and "iframe" in s, "the framing page loads")
        time.sleep(1.5)
        switched = wd("POST", f"{S}/frame", {"id": 0})
        check(not (isinstance(switched, dict) and "error" in switched), f"into the frame ({switched})")
        # The frame's own document (page source is the top document's in WebKit).
        return str(wd("POST", f"{S}/execute/sync", {"script": "return document.documentElement.outerHTML", "args": []}) or "")

    ctl = framed("/frame-control")
    check("back at the client" in ctl, f"control: a frameable page shows in the frame ({ctl[:200]})")
    check('name="api_key"' not in framed("/frame"), "the framed consent page did not render")
    wd("DELETE", S)
finally:
    driver.terminate()
    driver.wait(10)

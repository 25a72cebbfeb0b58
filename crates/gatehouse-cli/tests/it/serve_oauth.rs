//! OAuth on `gatehouse serve --public-url`, end to end against the real
//! binary: the official Python SDK's `OAuthClientProvider` through discovery,
//! registration, the consent form (a key pasted), calls, refresh and a
//! revocation through the CLI; then each attack over raw HTTP, named after
//! what it pins; then two instances on one database sharing a grant.

use std::net::TcpListener;
use std::process::Command;
use std::time::Duration;

use serde_json::{Value, json};

use crate::mcp_util::McpSite;
use crate::sdk::{SdkClient, interop_dir, missing};
use crate::serve_util::{Reply, Serve, request};
use crate::util::TestSite;

const VERIFIER: &str = "dBjftJeZ4CVP-mB92K27uhbUJU1p1r_wW1gFWFOEjXk";
/// S256 of [`VERIFIER`] (RFC 7636, appendix B).
const CHALLENGE: &str = "E9Melhoa2OwvFrEMTJguCHaoeK1t8URWbuGJSstw-cM";
const REDIRECT: &str = "http://127.0.0.1:9/callback";

/// A free loopback port, so the public URL can name it before serving.
fn free_addr() -> String {
    let l = TcpListener::bind("127.0.0.1:0").unwrap();
    l.local_addr().unwrap().to_string()
}

/// `serve` with OAuth on, its public URL its own address.
fn serve_oauth(site: &TestSite) -> (Serve, String) {
    let addr = free_addr();
    let base = format!("http://{addr}");
    (Serve::start_on(site, &addr, &["--public-url", &base]), base)
}

fn enc(pairs: &[(&str, &str)]) -> String {
    url::form_urlencoded::Serializer::new(String::new())
        .extend_pairs(pairs)
        .finish()
}

fn form_post(addr: &str, path: &str, extra: &[(&str, &str)], pairs: &[(&str, &str)]) -> Reply {
    let mut headers = vec![("Content-Type", "application/x-www-form-urlencoded")];
    headers.extend_from_slice(extra);
    request(addr, "POST", path, &headers, enc(pairs).as_bytes())
}

fn query_of(location: &str, name: &str) -> Option<String> {
    url::Url::parse(location)
        .unwrap()
        .query_pairs()
        .find(|(k, _)| k == name)
        .map(|(_, v)| v.into_owned())
}

fn register(addr: &str) -> String {
    let r = request(
        addr,
        "POST",
        "/register",
        &[("Content-Type", "application/json")],
        json!({"client_name": "raw", "redirect_uris": [REDIRECT], "token_endpoint_auth_method": "none"})
            .to_string()
            .as_bytes(),
    );
    assert_eq!(r.status, 201, "{}", r.text());
    r.json()["client_id"].as_str().unwrap().to_string()
}

fn authorize_target(base: &str, client_id: &str, scope: &str, method: &str) -> String {
    format!(
        "/authorize?{}",
        enc(&[
            ("response_type", "code"),
            ("client_id", client_id),
            ("redirect_uri", REDIRECT),
            ("code_challenge", CHALLENGE),
            ("code_challenge_method", method),
            ("state", "xyz"),
            ("scope", scope),
            ("resource", &format!("{base}/mcp")),
        ])
    )
}

/// The consent page's hidden fields and the CSRF cookie.
struct Consent {
    request: String,
    csrf: String,
    cookie: String,
    page: Reply,
}

fn field(html: &str, name: &str) -> String {
    let marker = format!("name=\"{name}\" value=\"");
    let start = html
        .find(&marker)
        .unwrap_or_else(|| panic!("{name} in {html}"))
        + marker.len();
    html[start..].split('"').next().unwrap().to_string()
}

fn consent(addr: &str, base: &str, client_id: &str, scope: &str) -> Consent {
    let page = request(
        addr,
        "GET",
        &authorize_target(base, client_id, scope, "S256"),
        &[],
        b"",
    );
    assert_eq!(page.status, 200, "{}", page.text());
    let html = page.text();
    let cookie = page
        .header("set-cookie")
        .unwrap()
        .split(';')
        .next()
        .unwrap()
        .to_string();
    Consent {
        request: field(&html, "request"),
        csrf: field(&html, "csrf"),
        cookie,
        page,
    }
}

/// Approves the consent page `c` with `key` and redeems the code: the token
/// endpoint's answer (200, asserted).
fn approve_and_redeem(addr: &str, base: &str, client_id: &str, c: &Consent, key: &str) -> Reply {
    let r = form_post(
        addr,
        "/authorize",
        &[("Cookie", &c.cookie), ("Origin", base)],
        &[
            ("request", &c.request),
            ("csrf", &c.csrf),
            ("api_key", key),
            ("decision", "approve"),
        ],
    );
    assert_eq!(r.status, 303, "{}", r.text());
    let code = query_of(r.header("location").unwrap(), "code").unwrap();
    let t = redeem(addr, base, client_id, &code);
    assert_eq!(t.status, 200, "{}", t.text());
    t
}

/// The whole flow over raw HTTP: an access and a refresh token for `scope`.
fn tokens(addr: &str, base: &str, key: &str, scope: &str) -> (String, String, String) {
    let client_id = register(addr);
    let c = consent(addr, base, &client_id, scope);
    let j = approve_and_redeem(addr, base, &client_id, &c, key).json();
    (
        j["access_token"].as_str().unwrap().to_string(),
        j["refresh_token"].as_str().unwrap().to_string(),
        client_id,
    )
}

/// Exchanges an authorization code made for `client_id` (with the tests' verifier and
/// redirect) at the token endpoint.
fn redeem(addr: &str, base: &str, client_id: &str, code: &str) -> Reply {
    form_post(
        addr,
        "/token",
        &[],
        &[
            ("grant_type", "authorization_code"),
            ("code", code),
            ("redirect_uri", REDIRECT),
            ("code_verifier", VERIFIER),
            ("client_id", client_id),
            ("resource", &format!("{base}/mcp")),
        ],
    )
}

fn call(s: &Serve, token: &str, tool: &str, args: Value) -> Reply {
    s.legacy(
        Some(token),
        "tools/call",
        json!({"name": tool, "arguments": args}),
    )
}

#[test]
fn python_sdk_connects_through_the_consent_form_refreshes_and_is_revoked() {
    let site = TestSite::new("serve_oauth_py");
    let Some(client) = SdkClient::python("python_oauth_client.py", &site) else {
        return;
    };
    let (editor, _) = site.mint("editor");
    let (serve, base) = serve_oauth(&site);
    client
        .arg(format!("{base}/mcp"))
        .env("INTEROP_OAUTH_KEY", &editor)
        .run_against(&serve);
    assert!(!serve.stderr().contains(&editor), "the key reached the log");
    let actions: Vec<String> = site
        .audit()
        .iter()
        .map(|e| e["action"].as_str().unwrap_or("").to_string())
        .collect();
    for a in ["oauth.approve", "oauth.grant", "oauth.revoke"] {
        assert!(actions.iter().any(|x| x == a), "{a} audited: {actions:?}");
    }
}

#[test]
fn no_credentials_get_the_challenge_pointing_to_the_resource_metadata() {
    let site = TestSite::new("serve_oauth_challenge");
    let (s, base) = serve_oauth(&site);
    let r = s.legacy(None, "tools/list", json!({}));
    assert_eq!(r.status, 401);
    let challenge = r.header("www-authenticate").unwrap();
    assert!(
        challenge.contains(&format!(
            "resource_metadata=\"{base}/.well-known/oauth-protected-resource/mcp\""
        )),
        "{challenge}"
    );
    assert!(challenge.contains("scope=\"content:read"), "{challenge}");
    for path in [
        "/.well-known/oauth-protected-resource/mcp",
        "/.well-known/oauth-protected-resource",
    ] {
        let m = request(&s.addr, "GET", path, &[], b"").json();
        assert_eq!(m["resource"], format!("{base}/mcp"));
        assert_eq!(m["authorization_servers"], json!([base]));
    }
    for path in [
        "/.well-known/oauth-authorization-server",
        "/.well-known/openid-configuration",
    ] {
        let m = request(&s.addr, "GET", path, &[], b"").json();
        assert_eq!(m["issuer"], base);
        assert_eq!(m["code_challenge_methods_supported"], json!(["S256"]));
    }
    // API keys keep working beside tokens.
    let (key, _) = site.mint("viewer");
    assert_eq!(s.legacy(Some(&key), "tools/list", json!({})).status, 200);
}

#[test]
fn issuer_comes_from_public_url_never_from_host() {
    let site = TestSite::new("serve_oauth_host");
    let (s, base) = serve_oauth(&site);
    let r = request(
        &s.addr,
        "GET",
        "/.well-known/oauth-authorization-server",
        &[("Host", "localhost")],
        b"",
    );
    assert_eq!(r.json()["issuer"], base);
    let r = request(
        &s.addr,
        "GET",
        "/.well-known/oauth-authorization-server",
        &[("Host", "evil.example")],
        b"",
    );
    assert_eq!(r.status, 403);
}

#[test]
fn scope_too_small_is_403_naming_the_needed_scopes_and_the_manifest_is_narrowed() {
    let site = TestSite::new("serve_oauth_scope");
    let (editor, _) = site.mint("editor");
    let (s, base) = serve_oauth(&site);
    let (access, _, _) = tokens(&s.addr, &base, &editor, "content:read");
    let tools: Vec<String> =
        s.legacy(Some(&access), "tools/list", json!({})).json()["result"]["tools"]
            .as_array()
            .unwrap()
            .iter()
            .map(|t| t["name"].as_str().unwrap().to_string())
            .collect();
    assert!(tools.contains(&"content_read".to_string()), "{tools:?}");
    assert!(
        !tools.contains(&"content_write_draft".to_string()),
        "{tools:?}"
    );
    assert_eq!(
        call(&s, &access, "content_read", json!({"slug": "welcome"})).status,
        200
    );
    let r = call(
        &s,
        &access,
        "content_write_draft",
        json!({"slug": "x", "title": "x", "body": "x"}),
    );
    assert_eq!(r.status, 403, "{}", r.text());
    let challenge = r.header("www-authenticate").unwrap();
    assert!(
        challenge.contains("error=\"insufficient_scope\""),
        "{challenge}"
    );
    assert!(
        challenge.contains("scope=\"content:read content:write\""),
        "{challenge}"
    );
}

#[test]
fn expired_or_unknown_token_is_401_invalid_token() {
    let site = TestSite::new("serve_oauth_unknown");
    let (s, _) = serve_oauth(&site);
    let r = s.legacy(
        Some("gatehouse_at_AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA"),
        "tools/list",
        json!({}),
    );
    assert_eq!(r.status, 401);
    assert!(
        r.header("www-authenticate")
            .unwrap()
            .contains("invalid_token")
    );
}

/// Made-up tokens are limited per network, but a token this server issued
/// is checked before the limit, as a key it verified is: the bucket had
/// been checked first, so one junk token every few seconds from a shared
/// network (a connector's egress, an office's NAT) refused every user there.
#[test]
fn made_up_tokens_from_a_network_never_lock_out_the_good_tokens_from_it() {
    let site = TestSite::new("serve_oauth_junk_network");
    let (editor, _) = site.mint("editor");
    let addr = free_addr();
    let base = format!("http://{addr}");
    let s = Serve::start_on(
        &site,
        &addr,
        &["--public-url", &base, "--behind-proxy", "127.0.0.1"],
    );
    let (access, _, _) = tokens(&s.addr, &base, &editor, "content:read");
    let list = |token: &str, from: &str| {
        crate::serve_util::try_legacy_with(
            &s.addr,
            Some(token),
            &[("X-Forwarded-For", from)],
            1,
            "tools/list",
            json!({}),
        )
        .unwrap()
        .status
    };
    let junk = format!("gatehouse_at_{}", "B".repeat(43));
    let statuses: Vec<u16> = (0..12).map(|_| list(&junk, "192.0.2.200")).collect();
    assert!(statuses[..5].iter().all(|s| *s == 401), "{statuses:?}");
    assert_eq!(
        statuses[11], 429,
        "made-up tokens are limited: {statuses:?}"
    );
    assert_eq!(
        list(&access, "192.0.2.5"),
        200,
        "a good token from that network"
    );
    assert_eq!(list(&junk, "192.0.2.201"), 429, "and junk stays limited");
}

/// Anyone may register a client with any https redirect URI: an error sent
/// there before anyone approved the client would make this server an open
/// redirector (a link on the site's own address bouncing to the attacker's).
/// Every such refusal is a page here, and says what was wrong.
#[test]
fn authorize_is_no_open_redirector_for_a_self_registered_client() {
    let site = TestSite::new("serve_oauth_no_open_redirect");
    let (s, base) = serve_oauth(&site);
    let evil = "https://evil.example/login?next=bank";
    let r = request(
        &s.addr,
        "POST",
        "/register",
        &[("Content-Type", "application/json")],
        json!({"redirect_uris": [evil], "token_endpoint_auth_method": "none"})
            .to_string()
            .as_bytes(),
    );
    assert_eq!(r.status, 201, "{}", r.text());
    let id = r.json()["client_id"].as_str().unwrap().to_string();
    // The request of a well-behaved client, with `changes` made (an empty
    // value leaves the parameter out).
    let target = |changes: &[(&str, &str)]| {
        let resource = format!("{base}/mcp");
        let mut pairs = vec![
            ("response_type", "code"),
            ("client_id", id.as_str()),
            ("redirect_uri", evil),
            ("code_challenge", CHALLENGE),
            ("code_challenge_method", "S256"),
            ("state", "xyz"),
            ("scope", "content:read"),
            ("resource", resource.as_str()),
        ];
        for (k, v) in changes {
            pairs.retain(|(name, _)| name != k);
            if !v.is_empty() {
                pairs.push((*k, *v));
            }
        }
        format!("/authorize?{}", enc(&pairs))
    };
    let long_state = "s".repeat(2048);
    for (bad, why) in [
        (vec![], "nothing"),
        (vec![("response_type", "token")], "response_type=code"),
        (vec![("code_challenge_method", "plain")], "S256"),
        (vec![("code_challenge", "")], "code_challenge is required"),
        (vec![("resource", "https://other.example/mcp")], "resource"),
        (vec![("scope", "everything")], "scope"),
        (vec![("state", long_state.as_str())], "state is over"),
    ] {
        let r = request(&s.addr, "GET", &target(&bad), &[], b"");
        assert!(r.header("location").is_none(), "{bad:?} redirected");
        if bad.is_empty() {
            assert_eq!(r.status, 200, "the consent page: {}", r.text());
            continue;
        }
        assert_eq!(r.status, 400, "{bad:?}: {}", r.text());
        assert!(r.text().contains(why), "{bad:?}: {}", r.text());
    }
}

#[test]
fn consent_page_refuses_framing_and_scripts() {
    let site = TestSite::new("serve_oauth_frame");
    let (s, base) = serve_oauth(&site);
    let id = register(&s.addr);
    let c = consent(&s.addr, &base, &id, "content:read");
    let csp = c.page.header("content-security-policy").unwrap();
    assert!(csp.contains("frame-ancestors 'none'"), "{csp}");
    assert!(csp.contains("default-src 'none'"), "{csp}");
    assert!(!csp.contains("script-src"), "{csp}");
    assert_eq!(c.page.header("x-frame-options"), Some("DENY"));
    assert!(!c.page.text().contains("<script"));
    let cookie = c.page.header("set-cookie").unwrap();
    assert!(
        cookie.contains("HttpOnly") && cookie.contains("SameSite=Strict"),
        "{cookie}"
    );
}

#[test]
fn consent_post_from_another_site_or_without_the_csrf_cookie_is_refused() {
    let site = TestSite::new("serve_oauth_csrf");
    let (editor, _) = site.mint("editor");
    let (s, base) = serve_oauth(&site);
    let id = register(&s.addr);
    let c = consent(&s.addr, &base, &id, "content:read");
    let form = [
        ("request", c.request.as_str()),
        ("csrf", c.csrf.as_str()),
        ("api_key", editor.as_str()),
        ("decision", "approve"),
    ];
    // A form on another site: its Origin gives it away.
    let r = form_post(
        &s.addr,
        "/authorize",
        &[("Cookie", &c.cookie), ("Origin", "https://evil.example")],
        &form,
    );
    assert_eq!(r.status, 403, "{}", r.text());
    // A forged post without the cookie (SameSite=Strict keeps it off cross-site posts).
    let r = form_post(&s.addr, "/authorize", &[("Origin", &base)], &form);
    assert_eq!(r.status, 403, "{}", r.text());
    // The real form still works afterwards.
    let r = form_post(
        &s.addr,
        "/authorize",
        &[("Cookie", &c.cookie), ("Origin", &base)],
        &form,
    );
    assert_eq!(r.status, 303, "{}", r.text());
}

#[test]
fn redirect_uri_not_registered_is_an_error_page_not_a_redirect() {
    let site = TestSite::new("serve_oauth_redirect");
    let (s, base) = serve_oauth(&site);
    let id = register(&s.addr);
    let target =
        authorize_target(&base, &id, "content:read", "S256").replace("%2Fcallback", "%2Fevil");
    let r = request(&s.addr, "GET", &target, &[], b"");
    assert_eq!(r.status, 400);
    assert!(r.header("location").is_none());
    assert!(r.text().contains("not registered"), "{}", r.text());
}

/// A parameter sent twice is refused on an error page (RFC 6749 §3.1),
/// never read as absent: a second `scope` had made the consent page ask
/// for every scope, and a second `state` left the redirect without one.
#[test]
fn repeated_oauth_parameters_are_refused_not_read_as_absent() {
    let site = TestSite::new("serve_oauth_repeated");
    let (s, base) = serve_oauth(&site);
    let id = register(&s.addr);
    let target = authorize_target(&base, &id, "content:read", "S256");
    for repeated in ["&scope=media%3Aread", "&state=other"] {
        let r = request(&s.addr, "GET", &format!("{target}{repeated}"), &[], b"");
        assert_eq!(r.status, 400, "{repeated}: {}", r.text());
        assert!(r.header("location").is_none(), "{repeated}");
        assert!(r.header("set-cookie").is_none(), "{repeated}");
        assert!(
            r.text().contains("more than once"),
            "{repeated}: {}",
            r.text()
        );
    }
    let r = form_post(
        &s.addr,
        "/token",
        &[],
        &[
            ("grant_type", "refresh_token"),
            ("grant_type", "authorization_code"),
            ("client_id", &id),
        ],
    );
    assert_eq!(r.status, 400, "{}", r.text());
    assert_eq!(r.json()["error"], "invalid_request", "{}", r.text());
    assert!(
        r.json()["error_description"]
            .as_str()
            .is_some_and(|d| d.contains("grant_type")),
        "{}",
        r.text()
    );
}

#[test]
fn code_reused_is_refused_and_the_first_token_revoked() {
    let site = TestSite::new("serve_oauth_code_reuse");
    let (editor, _) = site.mint("editor");
    let (s, base) = serve_oauth(&site);
    let client_id = register(&s.addr);
    let c = consent(&s.addr, &base, &client_id, "content:read");
    let r = form_post(
        &s.addr,
        "/authorize",
        &[("Cookie", &c.cookie), ("Origin", &base)],
        &[
            ("request", &c.request),
            ("csrf", &c.csrf),
            ("api_key", &editor),
            ("decision", "approve"),
        ],
    );
    let code = query_of(r.header("location").unwrap(), "code").unwrap();
    let exchange = || redeem(&s.addr, &base, &client_id, &code);
    let first = exchange();
    assert_eq!(first.status, 200);
    let access = first.json()["access_token"].as_str().unwrap().to_string();
    assert_eq!(s.legacy(Some(&access), "tools/list", json!({})).status, 200);
    let again = exchange();
    assert_eq!(again.status, 400);
    assert_eq!(again.json()["error"], "invalid_grant");
    assert_eq!(s.legacy(Some(&access), "tools/list", json!({})).status, 401);
}

#[test]
fn refresh_reused_revokes_the_grant() {
    let site = TestSite::new("serve_oauth_refresh_reuse");
    let (editor, _) = site.mint("editor");
    let (s, base) = serve_oauth(&site);
    let (_, refresh, client_id) = tokens(&s.addr, &base, &editor, "content:read");
    let rotate = |rt: &str| {
        form_post(
            &s.addr,
            "/token",
            &[],
            &[
                ("grant_type", "refresh_token"),
                ("refresh_token", rt),
                ("client_id", &client_id),
            ],
        )
    };
    let second = rotate(&refresh);
    assert_eq!(second.status, 200, "{}", second.text());
    let new_access = second.json()["access_token"].as_str().unwrap().to_string();
    assert_eq!(
        s.legacy(Some(&new_access), "tools/list", json!({})).status,
        200
    );
    assert_eq!(rotate(&refresh).json()["error"], "invalid_grant");
    assert_eq!(
        s.legacy(Some(&new_access), "tools/list", json!({})).status,
        401
    );
    let grants = site.ok_json(&["oauth", "grants", "--json"]);
    assert_eq!(grants[0]["revoked_reason"], "refresh token reused");
}

#[test]
fn registration_flood_is_limited_per_address() {
    let site = TestSite::new("serve_oauth_flood");
    let (s, _) = serve_oauth(&site);
    let body =
        json!({"redirect_uris": [REDIRECT], "token_endpoint_auth_method": "none"}).to_string();
    let statuses: Vec<u16> = (0..12)
        .map(|_| {
            request(
                &s.addr,
                "POST",
                "/register",
                &[("Content-Type", "application/json")],
                body.as_bytes(),
            )
            .status
        })
        .collect();
    assert_eq!(&statuses[..10], &[201; 10]);
    assert_eq!(statuses[10], 429, "{statuses:?}");
}

#[test]
fn metadata_document_at_a_private_address_is_refused_without_naming_what_it_resolved_to() {
    let site = TestSite::new("serve_oauth_cimd_private");
    let (s, base) = serve_oauth(&site);
    for doc in [
        "https://127.0.0.1/client.json",
        "https://169.254.169.254/latest/client.json",
    ] {
        let target = authorize_target(&base, doc, "content:read", "S256");
        let r = request(&s.addr, "GET", &target, &[], b"");
        assert_eq!(r.status, 400, "{}", r.text());
        assert!(r.header("location").is_none());
        assert!(r.text().contains("cannot be fetched"), "{}", r.text());
    }
    // Anyone may ask: the page says why in general terms, never what a name
    // resolved to here or what the resolver answered.
    for (doc, why) in [
        ("https://localhost/client.json", "internal address"),
        (
            "https://no-such-host.invalid/client.json",
            "cannot be resolved",
        ),
    ] {
        let target = authorize_target(&base, doc, "content:read", "S256");
        let r = request(&s.addr, "GET", &target, &[], b"");
        assert_eq!(r.status, 400, "{}", r.text());
        let page = r.text();
        assert!(page.contains(why), "{page}");
        for leak in ["127.0.0.1", "::1", "lookup", "resolve no-such"] {
            assert!(!page.contains(leak), "{leak} in {page}");
        }
    }
}

#[test]
fn without_public_url_the_oauth_paths_stay_404() {
    let site = TestSite::new("serve_oauth_off");
    let s = Serve::start(&site, &[]);
    for path in [
        "/.well-known/oauth-protected-resource/mcp",
        "/.well-known/oauth-authorization-server",
        "/authorize",
        "/token",
    ] {
        assert_eq!(
            request(&s.addr, "GET", path, &[], b"").status,
            404,
            "{path}"
        );
    }
}

#[test]
fn a_grant_made_through_one_instance_works_on_another_and_revocation_reaches_it() {
    // One database: PostgreSQL under GATEHOUSE_TEST_PG_URL, else the SQLite file.
    let site = TestSite::new("serve_oauth_two");
    let (editor, _) = site.mint("editor");
    let (a, base) = serve_oauth(&site);
    // Behind one load balancer both instances have the same public URL.
    let b = Serve::start(&site, &["--public-url", &base]);
    let (access, _, _) = tokens(&a.addr, &base, &editor, "content:read");
    let r = b.legacy(Some(&access), "tools/list", json!({}));
    assert_eq!(r.status, 200, "{}", r.text());
    let id = site.ok_json(&["oauth", "grants", "--json"])[0]["id"]
        .as_str()
        .unwrap()
        .to_string();
    site.ok(&["oauth", "revoke", &id]);
    // The very next request is refused: nothing on either instance caches
    // the token (a clock here would only measure the machine's load).
    assert_eq!(b.legacy(Some(&access), "tools/list", json!({})).status, 401);
}

/// A key kept to some networks approves a grant only from them: pasted
/// from elsewhere it had made a grant in its own name (its tokens were then
/// refused on use, but the grant and its audit entry stood).
#[test]
fn a_key_kept_to_other_networks_cannot_approve_a_grant_from_here() {
    let site = TestSite::new("serve_oauth_consent_network");
    let kept = site.ok_json(&[
        "keys",
        "mint",
        "--label",
        "kept",
        "--roles",
        "editor",
        "--from",
        "10.0.0.0/8",
        "--json",
    ])["key"]
        .as_str()
        .unwrap()
        .to_string();
    let (s, base) = serve_oauth(&site);
    let client_id = register(&s.addr);
    let c = consent(&s.addr, &base, &client_id, "content:read");
    let r = form_post(
        &s.addr,
        "/authorize",
        &[("Cookie", &c.cookie), ("Origin", &base)],
        &[
            ("request", &c.request),
            ("csrf", &c.csrf),
            ("api_key", &kept),
            ("decision", "approve"),
        ],
    );
    assert_eq!(r.status, 400, "{}", r.text());
    assert!(r.header("location").is_none());
    assert!(
        r.text().contains("not accepted from 127.0.0.1"),
        "{}",
        r.text()
    );
    assert_eq!(site.ok_json(&["oauth", "grants", "--json"]), json!([]));
}

/// A revoked grant is announced on its open listen streams, which then end
/// with the refusal, as a revoked key's do: the token's refusal was not
/// taken as the actor's, so no `list_changed` came and the stream stayed
/// open for good.
#[test]
fn a_revoked_grant_ends_its_listen_streams_after_announcing_it() {
    let site = TestSite::new("serve_oauth_listen_revoked");
    let (editor, _) = site.mint("editor");
    let (s, base) = serve_oauth(&site);
    let (access, _, _) = tokens(&s.addr, &base, &editor, "content:read");
    let mut events = s.modern_stream(
        Some(&access),
        5,
        "subscriptions/listen",
        json!({"notifications": {"toolsListChanged": true}}),
    );
    assert_eq!(events.status, 200);
    let ack = events.next_message(crate::serve_util::PATIENCE).unwrap();
    assert_eq!(
        ack["method"], "notifications/subscriptions/acknowledged",
        "{ack}"
    );
    let id = site.ok_json(&["oauth", "grants", "--json"])[0]["id"]
        .as_str()
        .unwrap()
        .to_string();
    site.ok(&["oauth", "revoke", &id]);
    let mut seen = Vec::new();
    while let Some(m) = events.next_message(Duration::from_secs(15)) {
        let end = m.get("id").is_some();
        seen.push(m);
        if end {
            break;
        }
    }
    assert!(
        seen.iter()
            .any(|m| m["method"] == "notifications/tools/list_changed"),
        "{seen:?}"
    );
    let end = seen.last().unwrap();
    assert_eq!(end["id"], 5, "{seen:?}");
    assert_eq!(
        end["error"]["data"]["code"], "OAUTH_TOKEN_INVALID",
        "{seen:?}"
    );
    events.close();
}

#[test]
fn a_grant_id_beginning_with_dash_h_is_revoked_not_read_as_the_help_flag() {
    // Ids were bare base64url: one in 64 began with `-`, which the CLI read as
    // an option (exit 2), and `-h…` printed the help and exited 0, revoking
    // nothing. New ids begin with `gr_`; one made before is still revoked.
    let site = TestSite::new("serve_oauth_dash_id");
    let (editor, _) = site.mint("editor");
    let (s, base) = serve_oauth(&site);
    let (access, _, _) = tokens(&s.addr, &base, &editor, "content:read");
    let id = site.ok_json(&["oauth", "grants", "--json"])[0]["id"]
        .as_str()
        .unwrap()
        .to_string();
    let old = format!("-h{}", id.trim_start_matches("gr_"));
    site.sql(&format!(
        "UPDATE oauth_grants SET id = '{old}' WHERE id = '{id}'; \
         UPDATE oauth_tokens SET grant_id = '{old}' WHERE grant_id = '{id}'"
    ));
    assert_eq!(s.legacy(Some(&access), "tools/list", json!({})).status, 200);
    site.ok(&["oauth", "revoke", &old]);
    let r = s.legacy(Some(&access), "tools/list", json!({}));
    assert_eq!(r.status, 401, "{}", r.text());
    let grants = site.ok_json(&["oauth", "grants", "--json"]);
    assert_eq!(
        grants[0]["revoked_reason"], "revoked by an admin",
        "{grants}"
    );
    assert!(id.starts_with("gr_"), "{id}");
}

/// The head of one response read from `conn`: its status and headers, its
/// body read by its `Content-Length` (and dropped).
fn response_head(conn: &mut std::io::BufReader<std::net::TcpStream>) -> (u16, Vec<String>) {
    use std::io::{BufRead, Read};
    let mut status = String::new();
    conn.read_line(&mut status).unwrap();
    let mut headers = Vec::new();
    loop {
        let mut line = String::new();
        conn.read_line(&mut line).unwrap();
        if line.trim().is_empty() {
            break;
        }
        headers.push(line.trim().to_ascii_lowercase());
    }
    let length = headers
        .iter()
        .find_map(|h| h.strip_prefix("content-length:"))
        .map_or(0, |n| n.trim().parse().unwrap());
    conn.read_exact(&mut vec![0; length]).unwrap();
    let code = status.split(' ').nth(1).unwrap().parse().unwrap();
    (code, headers)
}

#[test]
fn a_refusal_sent_before_the_body_arrived_says_the_connection_closes() {
    use std::io::{BufReader, Read, Write};
    let site = TestSite::new("serve_oauth_early_close");
    let (key, _) = site.mint("viewer");
    let (s, _) = serve_oauth(&site);
    let body = json!({"jsonrpc": "2.0", "id": 1, "method": "tools/list"}).to_string();
    let head = |auth: &str| {
        format!(
            "POST /mcp HTTP/1.1\r\nHost: {}\r\nContent-Type: application/json\r\n\
             MCP-Protocol-Version: {}\r\n{auth}Content-Length: {}\r\n\r\n",
            s.addr,
            crate::serve_util::LEGACY,
            body.len()
        )
    };
    // The headers alone, as from a client descheduled between its two
    // writes: the 401 needs no more, and the server will not keep the
    // connection with a body left unread, so the answer must say so (a
    // client that reused it found it closed: "server disconnected").
    let mut conn = BufReader::new(std::net::TcpStream::connect(&s.addr).unwrap());
    conn.get_mut()
        .set_read_timeout(Some(Duration::from_secs(30)))
        .unwrap();
    conn.get_mut().write_all(head("").as_bytes()).unwrap();
    let (status, headers) = response_head(&mut conn);
    assert_eq!(status, 401, "{headers:?}");
    assert!(
        headers.iter().any(|h| h == "connection: close"),
        "{headers:?}"
    );
    let _ = conn.get_mut().write_all(body.as_bytes());
    let mut rest = Vec::new();
    let _ = conn.read_to_end(&mut rest);
    assert!(rest.is_empty(), "{}", String::from_utf8_lossy(&rest));

    // A request whose body was read keeps its connection: two on one.
    let mut conn = BufReader::new(std::net::TcpStream::connect(&s.addr).unwrap());
    conn.get_mut()
        .set_read_timeout(Some(Duration::from_secs(30)))
        .unwrap();
    for _ in 0..2 {
        let auth = format!("Authorization: Bearer {key}\r\n");
        conn.get_mut()
            .write_all(format!("{}{body}", head(&auth)).as_bytes())
            .unwrap();
        let (status, headers) = response_head(&mut conn);
        assert_eq!(status, 200, "{headers:?}");
        assert!(
            !headers.iter().any(|h| h == "connection: close"),
            "{headers:?}"
        );
    }
}

#[test]
fn site_export_leaves_grants_behind_and_the_moved_site_refuses_their_tokens() {
    let src = TestSite::new("serve_oauth_export_src");
    let (editor, _) = src.mint("editor");
    let (a, base) = serve_oauth(&src);
    let (access, refresh, _) = tokens(&a.addr, &base, &editor, "content:read");
    assert_eq!(a.legacy(Some(&access), "tools/list", json!({})).status, 200);
    let tmp = tempfile::tempdir().unwrap();
    let file = tmp.path().join("site.json");
    src.ok(&["site", "export", "--out", file.to_str().unwrap()]);
    let text = std::fs::read_to_string(&file).unwrap();
    let dump: Value = serde_json::from_str(&text).unwrap();
    let tables: Vec<&String> = dump.as_object().unwrap().keys().collect();
    assert!(
        !tables
            .iter()
            .any(|k| k.contains("oauth") || k.contains("grant")),
        "{tables:?}"
    );
    assert!(!text.contains(&access) && !text.contains(&refresh));

    // The moved site (its audit log still tells of the grant) has none, and
    // the key the grant acted as works there as before.
    let dst = TestSite::plain("serve_oauth_export_dst");
    let src_key = src.ok(&["audit", "key"]).trim().to_string();
    dst.ok(&[
        "site",
        "import",
        file.to_str().unwrap(),
        "--trust-key",
        &src_key,
    ]);
    assert_eq!(dst.ok_json(&["oauth", "grants", "--json"]), json!([]));
    let (b, _) = serve_oauth(&dst);
    assert_eq!(b.legacy(Some(&access), "tools/list", json!({})).status, 401);
    assert_eq!(b.legacy(Some(&editor), "tools/list", json!({})).status, 200);
}

#[test]
fn pairing_code_approved_through_the_cli_completes_the_flow() {
    let site = TestSite::new("serve_oauth_pairing");
    let (_, key_id) = site.mint("viewer");
    let (s, base) = serve_oauth(&site);
    let client_id = register(&s.addr);
    let c = consent(&s.addr, &base, &client_id, "content:read");
    let headers = [("Cookie", c.cookie.as_str()), ("Origin", base.as_str())];
    let fields = |decision: &'static str, pair: &str| {
        vec![
            ("request", c.request.clone()),
            ("csrf", c.csrf.clone()),
            ("decision", decision.to_string()),
            ("pair", pair.to_string()),
        ]
    };
    let post = |f: Vec<(&str, String)>| {
        let pairs: Vec<(&str, &str)> = f.iter().map(|(k, v)| (*k, v.as_str())).collect();
        form_post(&s.addr, "/authorize", &headers, &pairs)
    };
    let page = post(fields("pair", ""));
    assert_eq!(page.status, 200, "{}", page.text());
    let code = field(&page.text(), "pair");
    assert_eq!(code.len(), 9, "{code}");
    // Not approved yet: the page waits.
    let waiting = post(fields("paired", &code));
    assert_eq!(waiting.status, 200);
    assert!(waiting.text().contains("Not approved yet"));
    // Without --yes the admin sees whose application it is, and nothing
    // is approved: a code passed on by someone else lets nobody in blind.
    let shown = site.fails(&["oauth", "approve", &code, "--key-id", &key_id]);
    assert_eq!(shown.code, "OAUTH_PAIRING_UNCONFIRMED", "{}", shown.stderr);
    for part in [client_id.as_str(), "\"raw\"", REDIRECT, "--yes"] {
        assert!(shown.stderr.contains(part), "{part}: {}", shown.stderr);
    }
    assert!(
        post(fields("paired", &code))
            .text()
            .contains("Not approved yet"),
        "a shown code stays unapproved"
    );
    // A forged continue without the cookie is refused even after approval.
    site.ok(&[
        "oauth",
        "approve",
        &code.to_lowercase(),
        "--key-id",
        &key_id,
        "--yes",
    ]);
    let forged = form_post(
        &s.addr,
        "/authorize",
        &[("Origin", &base)],
        &[
            ("request", &c.request),
            ("csrf", &c.csrf),
            ("decision", "paired"),
        ],
    );
    assert_eq!(forged.status, 403);
    let done = post(fields("paired", &code));
    assert_eq!(done.status, 303, "{}", done.text());
    let to = done.header("location").unwrap();
    assert!(query_of(to, "code").is_some(), "{to}");
    // The code is spent with its request: approving it again names no request.
    let again = site.run(&["oauth", "approve", &code, "--key-id", &key_id]);
    assert!(!again.status.success());
    let actions: Vec<String> = site
        .audit()
        .iter()
        .map(|e| e["action"].as_str().unwrap_or("").to_string())
        .collect();
    assert!(
        actions.contains(&"oauth.pair_approve".to_string()),
        "{actions:?}"
    );
}

#[test]
fn typescript_sdk_connects_through_the_consent_form_refreshes_and_is_revoked() {
    let site = TestSite::new("serve_oauth_ts");
    let Some(client) = SdkClient::node("ts_oauth_client.mjs", &site) else {
        return;
    };
    let (editor, _) = site.mint("editor");
    let (serve, base) = serve_oauth(&site);
    client
        .arg(format!("{base}/mcp"))
        .env("INTEROP_OAUTH_KEY", &editor)
        .run_against(&serve);
    assert!(!serve.stderr().contains(&editor), "the key reached the log");
}

/// A throwaway CA and a leaf for IP 127.0.0.1 signed by it, made with the
/// openssl CLI in `dir`: `(ca.pem, leaf.pem, leaf.key)`. A self-signed leaf
/// would not do: webpki refuses a CA certificate as an end entity.
fn loopback_cert(
    dir: &std::path::Path,
) -> Option<(std::path::PathBuf, std::path::PathBuf, std::path::PathBuf)> {
    let openssl = |args: &[&str]| {
        Command::new("openssl")
            .args(args)
            .current_dir(dir)
            .output()
            .is_ok_and(|o| o.status.success())
    };
    std::fs::write(
        dir.join("leaf.ext"),
        "subjectAltName=IP:127.0.0.1\nbasicConstraints=CA:FALSE\nextendedKeyUsage=serverAuth\n",
    )
    .ok()?;
    let made = openssl(&[
        "req",
        "-x509",
        "-newkey",
        "ec",
        "-pkeyopt",
        "ec_paramgen_curve:prime256v1",
        "-nodes",
        "-keyout",
        "ca.key",
        "-out",
        "ca.pem",
        "-subj",
        "/CN=gatehouse test CA",
        "-days",
        "1",
    ]) && openssl(&[
        "req",
        "-newkey",
        "ec",
        "-pkeyopt",
        "ec_paramgen_curve:prime256v1",
        "-nodes",
        "-keyout",
        "leaf.key",
        "-out",
        "leaf.csr",
        "-subj",
        "/CN=127.0.0.1",
    ]) && openssl(&[
        "x509",
        "-req",
        "-in",
        "leaf.csr",
        "-CA",
        "ca.pem",
        "-CAkey",
        "ca.key",
        "-CAcreateserial",
        "-out",
        "leaf.pem",
        "-days",
        "1",
        "-extfile",
        "leaf.ext",
    ]);
    made.then(|| {
        (
            dir.join("ca.pem"),
            dir.join("leaf.pem"),
            dir.join("leaf.key"),
        )
    })
}

/// An SDK client script identified by a metadata document it serves over
/// HTTPS itself: the server trusts a test CA (rustls reads SSL_CERT_FILE
/// for the platform's roots) and may fetch documents from that loopback port.
fn identified_by_document(site: &TestSite, client: SdkClient) {
    let tmp = tempfile::tempdir().unwrap();
    let Some((ca, cert, key)) = loopback_cert(tmp.path()) else {
        panic!("the openssl CLI could not make a test certificate");
    };
    let (editor, _) = site.mint("editor");
    // Both ports held at once, so they differ.
    let (doc, own) = (
        TcpListener::bind("127.0.0.1:0").unwrap(),
        TcpListener::bind("127.0.0.1:0").unwrap(),
    );
    let doc_addr = doc.local_addr().unwrap().to_string();
    let doc_port = doc_addr.rsplit(':').next().unwrap().to_string();
    let addr = own.local_addr().unwrap().to_string();
    drop((doc, own));
    let base = format!("http://{addr}");
    let serve = Serve::start_with_env(
        site,
        &addr,
        &["--public-url", &base, "--oauth-document-host", &doc_addr],
        &[("SSL_CERT_FILE", ca.as_os_str())],
    );
    client
        .arg(format!("{base}/mcp"))
        .env("INTEROP_OAUTH_KEY", &editor)
        .env("INTEROP_OAUTH_DOC_PORT", &doc_port)
        .env("INTEROP_OAUTH_DOC_CERT", &cert)
        .env("INTEROP_OAUTH_DOC_KEY", &key)
        .run_against(&serve);
    let grants = site.ok_json(&["oauth", "grants", "--json"]);
    assert_eq!(
        grants[0]["client_id"],
        json!(format!("https://127.0.0.1:{doc_port}/client.json")),
        "{grants}"
    );
}

#[test]
fn typescript_sdk_identified_by_a_metadata_document_over_https_completes_the_flow() {
    let site = TestSite::new("serve_oauth_ts_document");
    if let Some(client) = SdkClient::node("ts_oauth_client.mjs", &site) {
        identified_by_document(&site, client);
    }
}

#[test]
fn python_sdk_identified_by_a_metadata_document_over_https_completes_the_flow() {
    let site = TestSite::new("serve_oauth_py_document");
    if let Some(client) = SdkClient::python("python_oauth_client.py", &site) {
        identified_by_document(&site, client);
    }
}

#[test]
fn consent_page_in_a_real_browser_renders_refuses_cross_site_posts_and_framing() {
    let browser = std::path::Path::new("/usr/lib/x86_64-linux-gnu/webkit2gtk-4.1/MiniBrowser");
    let tools = browser.exists()
        && ["WebKitWebDriver", "xvfb-run", "flock"].iter().all(|t| {
            Command::new("sh")
                .args(["-c", &format!("command -v {t}")])
                .output()
                .is_ok_and(|o| o.status.success())
        });
    if missing(
        "WebKitGTK's MiniBrowser, WebKitWebDriver, xvfb-run and flock",
        tools,
    ) {
        return;
    }
    let site = TestSite::new("serve_oauth_browser");
    let (editor, _) = site.mint("editor");
    let (s, base) = serve_oauth(&site);
    let redirect_port = free_addr().rsplit(':').next().unwrap().to_string();
    let evil_port = free_addr().rsplit(':').next().unwrap().to_string();
    let r = request(
        &s.addr,
        "POST",
        "/register",
        &[("Content-Type", "application/json")],
        json!({"client_name": "Browser test", "token_endpoint_auth_method": "none",
               "redirect_uris": [format!("http://127.0.0.1:{redirect_port}/callback")]})
        .to_string()
        .as_bytes(),
    );
    let client_id = r.json()["client_id"].as_str().unwrap().to_string();
    // The desktop E2E holds the same lock while its WebDriver runs.
    let out = Command::new("flock")
        .args([
            "/tmp/e2e.lock",
            "xvfb-run",
            "-a",
            "python3",
            "browser_consent.py",
        ])
        .args([&base, &client_id, &redirect_port, &evil_port])
        .current_dir(interop_dir())
        .env("INTEROP_OAUTH_KEY", &editor)
        .output()
        .expect("the browser script runs");
    let stdout = String::from_utf8_lossy(&out.stdout);
    println!("{stdout}");
    assert!(
        out.status.success(),
        "browser check failed:\n{stdout}\nstderr:\n{}\nserver:\n{}",
        String::from_utf8_lossy(&out.stderr),
        s.stderr()
    );
}

/// The `mcp.tool_call` entries of `actor`, with their detail as JSON.
fn tool_calls_of(site: &TestSite, actor: &str) -> Vec<Value> {
    site.audit()
        .into_iter()
        .filter(|e| e["action"] == "mcp.tool_call" && e["actor"] == actor)
        .map(|e| match &e["detail"] {
            Value::String(s) => serde_json::from_str(s).unwrap(),
            other => other.clone(),
        })
        .collect()
}

#[test]
fn python_sdk_paired_as_a_user_acts_as_that_user_and_is_audited_with_who_decided() {
    let site = TestSite::new("serve_oauth_as_user");
    let Some(client) = SdkClient::python("python_oauth_client.py", &site) else {
        return;
    };
    let email = "ed@example.com";
    site.ok(&["users", "create", "--email", email, "--roles", "editor"]);
    let (serve, base) = serve_oauth(&site);
    client
        .arg(format!("{base}/mcp"))
        .env("INTEROP_OAUTH_AS", email)
        .env_remove("INTEROP_OAUTH_KEY")
        .run_against(&serve);
    let grant = site.ok_json(&["oauth", "grants", "--json"])[0].clone();
    assert_eq!(grant["acts_as"], json!({"kind": "user", "id": email}));
    let gid = grant["id"].as_str().unwrap();
    let audit = site.audit();
    let entry = |action: &str| {
        audit
            .iter()
            .find(|e| e["action"] == action)
            .unwrap_or_else(|| panic!("{action} audited: {audit:?}"))
            .clone()
    };
    let detail = |e: &Value| match &e["detail"] {
        Value::String(s) => serde_json::from_str::<Value>(s).unwrap(),
        other => other.clone(),
    };
    // Who decided (the admin at the terminal), and whom they chose.
    let decided = entry("oauth.pair_approve");
    assert_eq!(decided["actor"], "cli");
    assert_eq!(detail(&decided)["as"], format!("user:{email}"));
    assert_eq!(entry("oauth.grant")["actor"], format!("user:{email}"));
    assert_eq!(entry("oauth.revoke")["actor"], "cli");
    // Every call the token made is the user's, through this grant.
    let calls = tool_calls_of(&site, &format!("user:{email}"));
    assert!(calls.len() >= 2, "{calls:?}");
    assert!(calls.iter().all(|d| d["grant"] == gid), "{calls:?}");
}

/// The consent page's "I entered the code" post for pairing `code`.
fn post_paired(s: &Serve, base: &str, c: &Consent, code: &str) -> Reply {
    form_post(
        &s.addr,
        "/authorize",
        &[("Cookie", &c.cookie), ("Origin", base)],
        &[
            ("request", &c.request),
            ("csrf", &c.csrf),
            ("decision", "paired"),
            ("pair", code),
        ],
    )
}

/// A pairing code on a fresh consent page, and the page's fields.
fn paired(s: &Serve, base: &str) -> (Consent, String, String) {
    let client_id = register(&s.addr);
    let c = consent(&s.addr, base, &client_id, "content:read content:write");
    let page = form_post(
        &s.addr,
        "/authorize",
        &[("Cookie", &c.cookie), ("Origin", base)],
        &[
            ("request", &c.request),
            ("csrf", &c.csrf),
            ("decision", "pair"),
        ],
    );
    assert_eq!(page.status, 200, "{}", page.text());
    let code = field(&page.text(), "pair");
    (c, code, client_id)
}

#[test]
fn approve_as_an_unknown_or_disabled_user_is_refused_and_disabling_the_user_ends_the_grant() {
    let site = TestSite::new("serve_oauth_as_refused");
    site.ok(&[
        "users",
        "create",
        "--email",
        "gone@example.com",
        "--roles",
        "editor",
    ]);
    site.ok(&["users", "disable", "--email", "gone@example.com"]);
    site.ok(&[
        "users",
        "create",
        "--email",
        "ok@example.com",
        "--roles",
        "author",
    ]);
    let (s, base) = serve_oauth(&site);
    let (c, code, client_id) = paired(&s, &base);

    let unknown = site.fails(&["oauth", "approve", &code, "--as", "nobody@example.com"]);
    assert_eq!(unknown.code, "ACTOR_EMAIL_UNKNOWN", "{}", unknown.stderr);
    assert!(
        unknown.stderr.contains("users create"),
        "{}",
        unknown.stderr
    );
    let disabled = site.fails(&["oauth", "approve", &code, "--as", "gone@example.com"]);
    assert_eq!(disabled.code, "USER_DISABLED", "{}", disabled.stderr);
    assert!(
        disabled.stderr.contains("users enable"),
        "{}",
        disabled.stderr
    );
    // Neither both nor none of --as and --key-id.
    assert!(!site.run(&["oauth", "approve", &code]).status.success());
    let (_, key_id) = site.mint("viewer");
    assert!(
        !site
            .run(&[
                "oauth",
                "approve",
                &code,
                "--as",
                "ok@example.com",
                "--key-id",
                &key_id
            ])
            .status
            .success()
    );
    // A refused approval left the request waiting.
    let waiting = post_paired(&s, &base, &c, &code);
    assert!(
        waiting.text().contains("Not approved yet"),
        "{}",
        waiting.text()
    );

    site.ok(&["oauth", "approve", &code, "--as", "ok@example.com", "--yes"]);
    let done = post_paired(&s, &base, &c, &code);
    assert_eq!(done.status, 303, "{}", done.text());
    let code = query_of(done.header("location").unwrap(), "code").unwrap();
    let t = redeem(&s.addr, &base, &client_id, &code);
    assert_eq!(t.status, 200, "{}", t.text());
    let access = t.json()["access_token"].as_str().unwrap().to_string();
    let r = call(
        &s,
        &access,
        "content_write_draft",
        json!({"slug": "by-ok", "title": "T", "body": "b"}),
    );
    assert_eq!(r.status, 200, "{}", r.text());
    assert_ne!(r.json()["result"]["isError"], true, "{}", r.text());
    assert_eq!(tool_calls_of(&site, "user:ok@example.com").len(), 1);

    // Usage per grant: this grant's calls and refusals, not another's.
    let (key, other_key_id) = site.mint("editor");
    let (other, _, _) = tokens(&s.addr, &base, &key, "content:read");
    assert_eq!(call(&s, &other, "content_list", json!({})).status, 200);
    let r = call(&s, &access, "content_read", json!({"slug": "by-ok"}));
    assert_eq!(r.status, 200, "{}", r.text());
    // Outside the grant's scopes: a 403 before the core, still an audited refusal.
    let r = call(&s, &access, "media_list", json!({}));
    assert_eq!(r.status, 403, "{}", r.text());
    let listed = site.ok_json(&["oauth", "grants", "--usage", "--json"]);
    let of = |acts: Value| {
        listed
            .as_array()
            .unwrap()
            .iter()
            .find(|g| g["acts_as"] == acts)
            .unwrap_or_else(|| panic!("{listed}"))["usage"]
            .clone()
    };
    let mine = of(json!({"kind": "user", "id": "ok@example.com"}));
    assert_eq!(mine["calls_week"], 3, "{mine}");
    assert_eq!(mine["calls_day"], 3, "{mine}");
    assert_eq!(mine["refused_week"], 1, "{mine}");
    assert_eq!(mine["last_from"], "127.0.0.1", "{mine}");
    assert!(mine["last_call_at"].is_string(), "{mine}");
    let tools: Vec<(&str, i64)> = mine["by_tool"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| (t["tool"].as_str().unwrap(), t["week"].as_i64().unwrap()))
        .collect();
    assert_eq!(
        tools,
        [
            ("content_read", 1),
            ("content_write_draft", 1),
            ("media_list", 1)
        ],
        "{mine}"
    );
    let theirs = of(json!({"kind": "key", "id": other_key_id}));
    assert_eq!(theirs["calls_week"], 1, "{theirs}");
    let table = site.ok(&["oauth", "grants", "--usage"]);
    assert!(table.contains("user ok@example.com"), "{table}");
    assert!(table.contains("media_list 1"), "{table}");

    // The user disabled: the grant's token stops working at once.
    site.ok(&["users", "disable", "--email", "ok@example.com"]);
    let r = call(&s, &access, "content_list", json!({}));
    assert_eq!(r.status, 401, "{}", r.text());
    assert!(
        r.header("www-authenticate")
            .unwrap()
            .contains("invalid_token"),
        "{:?}",
        r.header("www-authenticate")
    );
}

/// Tokens of a grant acting as user `email`, paired on the consent page and
/// approved with `oauth approve --as`: (access, refresh, client id).
fn user_tokens(site: &TestSite, s: &Serve, base: &str, email: &str) -> (String, String, String) {
    let (c, code, client_id) = paired(s, base);
    site.ok(&["oauth", "approve", &code, "--as", email, "--yes"]);
    let done = post_paired(s, base, &c, &code);
    assert_eq!(done.status, 303, "{}", done.text());
    let code = query_of(done.header("location").unwrap(), "code").unwrap();
    let t = redeem(&s.addr, base, &client_id, &code);
    assert_eq!(t.status, 200, "{}", t.text());
    let j = t.json();
    (
        j["access_token"].as_str().unwrap().to_string(),
        j["refresh_token"].as_str().unwrap().to_string(),
        client_id,
    )
}

/// A grant names its user by email: removing the user, or disabling them,
/// revokes their grants, so the user created again with that email (or
/// enabled again) inherits no connector. The grants had only been
/// suspended: the old access and refresh tokens worked again, with the new
/// account's roles.
#[test]
fn removing_or_disabling_a_user_revokes_their_grants_and_a_recreated_user_inherits_none() {
    let site = TestSite::new("serve_oauth_user_gone");
    for email in ["alice@example.com", "bob@example.com"] {
        site.ok(&["users", "create", "--email", email, "--roles", "editor"]);
    }
    let (s, base) = serve_oauth(&site);
    let steps: [(&str, [&[&str]; 2]); 2] = [
        (
            "alice@example.com",
            [
                &["users", "delete", "--email", "alice@example.com"],
                &[
                    "users",
                    "create",
                    "--email",
                    "alice@example.com",
                    "--roles",
                    "viewer",
                ],
            ],
        ),
        (
            "bob@example.com",
            [
                &["users", "disable", "--email", "bob@example.com"],
                &["users", "enable", "--email", "bob@example.com"],
            ],
        ),
    ];
    for (email, [end, again]) in steps {
        let (access, refresh, client_id) = user_tokens(&site, &s, &base, email);
        assert_eq!(call(&s, &access, "content_list", json!({})).status, 200);
        site.ok(end);
        site.ok(again);
        let r = call(&s, &access, "content_list", json!({}));
        assert_eq!(r.status, 401, "{email}: {}", r.text());
        let r = form_post(
            &s.addr,
            "/token",
            &[],
            &[
                ("grant_type", "refresh_token"),
                ("refresh_token", &refresh),
                ("client_id", &client_id),
            ],
        );
        assert_eq!(r.status, 400, "{email}: {}", r.text());
        assert_eq!(r.json()["error"], "invalid_grant", "{email}: {}", r.text());
        let grants = site.ok_json(&["oauth", "grants", "--json"]);
        let grant = grants
            .as_array()
            .unwrap()
            .iter()
            .find(|g| g["acts_as"]["id"] == email)
            .unwrap_or_else(|| panic!("{grants}"));
        assert!(grant["revoked_at"].is_string(), "{email}: {grant}");
    }
    // A pairing approved as the user, not yet finished in the browser, ends
    // with the user too: finished after the user was made again, it had
    // given the old approval to the new account.
    site.ok(&[
        "users",
        "create",
        "--email",
        "carol@example.com",
        "--roles",
        "editor",
    ]);
    let (c, code, _) = paired(&s, &base);
    site.ok(&[
        "oauth",
        "approve",
        &code,
        "--as",
        "carol@example.com",
        "--yes",
    ]);
    site.ok(&["users", "delete", "--email", "carol@example.com"]);
    site.ok(&[
        "users",
        "create",
        "--email",
        "carol@example.com",
        "--roles",
        "viewer",
    ]);
    let done = post_paired(&s, &base, &c, &code);
    assert_ne!(done.status, 303, "{}", done.text());
    assert!(done.header("location").is_none(), "{}", done.text());
}

/// What a metadata-document fixture server answers.
#[derive(Clone)]
enum Doc {
    /// 200 with this JSON body.
    Body(String),
    /// 302 to this location.
    Redirect(String),
    /// 200 headers, then a byte a second, for ever.
    Drip,
    /// 200 with no length, then zeros for ever.
    Endless,
}

/// A local HTTP server for client metadata documents, counting the requests
/// it got (a refused address must never see one).
struct DocServer {
    addr: String,
    hits: std::sync::Arc<std::sync::atomic::AtomicUsize>,
}

impl DocServer {
    /// `doc` is told the document's own URL (a client id names it).
    fn start(doc: impl FnOnce(&str) -> Doc) -> DocServer {
        use std::io::{BufRead, BufReader, Write};
        use std::sync::atomic::Ordering;
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let addr = listener.local_addr().unwrap().to_string();
        let doc = doc(&format!("http://{addr}/client.json"));
        let hits = std::sync::Arc::new(std::sync::atomic::AtomicUsize::new(0));
        let counted = hits.clone();
        std::thread::spawn(move || {
            for conn in listener.incoming() {
                let Ok(mut conn) = conn else { return };
                counted.fetch_add(1, Ordering::SeqCst);
                let doc = doc.clone();
                std::thread::spawn(move || {
                    let mut reader = BufReader::new(conn.try_clone().unwrap());
                    let mut line = String::new();
                    while reader.read_line(&mut line).is_ok_and(|n| n > 2) {
                        line.clear();
                    }
                    let _ = match doc {
                        Doc::Body(body) => write!(
                            conn,
                            "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{body}",
                            body.len()
                        ),
                        Doc::Redirect(to) => write!(
                            conn,
                            "HTTP/1.1 302 Found\r\nLocation: {to}\r\nContent-Length: 0\r\nConnection: close\r\n\r\n"
                        ),
                        Doc::Drip => {
                            let _ = write!(
                                conn,
                                "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nConnection: close\r\n\r\n"
                            );
                            loop {
                                if conn.write_all(b" ").is_err() {
                                    break Ok(());
                                }
                                std::thread::sleep(std::time::Duration::from_secs(1));
                            }
                        }
                        Doc::Endless => {
                            let _ = write!(
                                conn,
                                "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nConnection: close\r\n\r\n"
                            );
                            let chunk = [b' '; 8192];
                            while conn.write_all(&chunk).is_ok() {}
                            Ok(())
                        }
                    };
                });
            }
        });
        DocServer { addr, hits }
    }

    fn url(&self) -> String {
        format!("http://{}/client.json", self.addr)
    }

    fn hits(&self) -> usize {
        self.hits.load(std::sync::atomic::Ordering::SeqCst)
    }
}

/// A metadata document for `client_id` with the test's redirect URI.
fn document(client_id: &str) -> String {
    json!({
        "client_id": client_id,
        "client_name": "Document Client",
        "redirect_uris": [REDIRECT],
        "grant_types": ["authorization_code", "refresh_token"],
        "response_types": ["code"],
        "token_endpoint_auth_method": "none",
    })
    .to_string()
}

/// `serve` with OAuth on, fetching documents from `hosts` although they are
/// on loopback.
fn serve_documents(site: &TestSite, hosts: &[&str]) -> (Serve, String) {
    let addr = free_addr();
    let base = format!("http://{addr}");
    let mut args = vec!["--public-url", base.as_str()];
    for h in hosts {
        args.extend(["--oauth-document-host", h]);
    }
    (Serve::start_on(site, &addr, &args), base)
}

/// The authorization page for a document client: its status and text.
fn authorize_document(s: &Serve, base: &str, client_id: &str) -> Reply {
    request(
        &s.addr,
        "GET",
        &authorize_target(base, client_id, "content:read", "S256"),
        &[],
        b"",
    )
}

#[test]
fn metadata_document_on_an_allowed_host_is_fetched_once_and_carries_the_whole_flow() {
    let site = TestSite::new("serve_oauth_cimd_ok");
    let (editor, _) = site.mint("editor");
    let docs = DocServer::start(|url| Doc::Body(document(url)));
    let client_id = docs.url();
    let (s, base) = serve_documents(&site, &[&docs.addr]);
    let c = consent(&s.addr, &base, &client_id, "content:read");
    assert!(
        c.page
            .text()
            .contains(&format!("identified by {client_id}")),
        "{}",
        c.page.text()
    );
    assert_eq!(docs.hits(), 1);
    let t = approve_and_redeem(&s.addr, &base, &client_id, &c, &editor);
    let access = t.json()["access_token"].as_str().unwrap().to_string();
    let r = call(&s, &access, "content_read", json!({"slug": "welcome"}));
    assert_eq!(r.status, 200, "{}", r.text());
    // Cached: a second authorization reads no document.
    assert_eq!(authorize_document(&s, &base, &client_id).status, 200);
    assert_eq!(docs.hits(), 1);
    let grants = site.ok_json(&["oauth", "grants", "--json"]);
    assert_eq!(grants[0]["client_id"], client_id.as_str());
    assert_eq!(grants[0]["client_name"], "Document Client");
}

/// A document client is shared by every user of a connector platform, and
/// its URL is public. Fetching its document again (anyone can, by opening an
/// authorization page once the cache lapsed) had rewritten its row as never
/// used, and the next lapse purged it: every grant of the platform's users
/// then failed to refresh with `invalid_client`.
#[test]
fn a_document_clients_grants_go_on_refreshing_after_anyone_fetches_it_again() {
    let site = TestSite::new("serve_oauth_cimd_refetch");
    let (editor, _) = site.mint("editor");
    let docs = DocServer::start(|url| Doc::Body(document(url)));
    let other = DocServer::start(|url| Doc::Body(document(url)));
    let client_id = docs.url();
    let (s, base) = serve_documents(&site, &[&docs.addr, &other.addr]);
    let c = consent(&s.addr, &base, &client_id, "content:read");
    let t = approve_and_redeem(&s.addr, &base, &client_id, &c, &editor);
    let refresh = t.json()["refresh_token"].as_str().unwrap().to_string();
    let lapse = || site.sql("UPDATE oauth_clients SET expires_at = 1");
    // The cache lapses; a stranger opens the page (fetched again), and leaves.
    lapse();
    assert_eq!(authorize_document(&s, &base, &client_id).status, 200);
    assert_eq!(docs.hits(), 2);
    // It lapses again; another document's page purges lapsed, unused clients.
    lapse();
    assert_eq!(authorize_document(&s, &base, &other.url()).status, 200);
    let r = form_post(
        &s.addr,
        "/token",
        &[],
        &[
            ("grant_type", "refresh_token"),
            ("refresh_token", &refresh),
            ("client_id", &client_id),
        ],
    );
    assert_eq!(r.status, 200, "{}", r.text());
}

/// Each hostile document is refused on the page (never a redirect to the
/// client), with why.
fn refused_page(s: &Serve, base: &str, client_id: &str, why: &str) {
    let r = authorize_document(s, base, client_id);
    assert_eq!(r.status, 400, "{}", r.text());
    assert!(r.header("location").is_none());
    assert!(r.text().contains(why), "{why} in {}", r.text());
}

#[test]
fn metadata_document_at_a_loopback_address_not_allowed_is_never_fetched() {
    let site = TestSite::new("serve_oauth_cimd_private_real");
    let docs = DocServer::start(|url| Doc::Body(document(url)));
    let (s, base) = serve_documents(&site, &[]);
    refused_page(&s, &base, &docs.url(), "internal address");
    assert_eq!(docs.hits(), 0, "the guard refused before connecting");
}

/// A document is never fetched through a redirect, even to an allowed host:
/// an open redirect on a trusted host had lent its URL, shown as the client's
/// identity, to a document elsewhere naming the trusted URL as its client_id.
#[test]
fn metadata_document_behind_a_redirect_is_refused_and_the_redirect_never_followed() {
    let site = TestSite::new("serve_oauth_cimd_redirect");
    let inner = DocServer::start(|url| Doc::Body(document(url)));
    let inner_url = inner.url();
    let outer = DocServer::start(|_| Doc::Redirect(inner_url));
    let (s, base) = serve_documents(&site, &[&outer.addr, &inner.addr]);
    refused_page(&s, &base, &outer.url(), "redirect");
    assert_eq!(outer.hits(), 1);
    assert_eq!(inner.hits(), 0, "the redirect's target was never reached");
}

#[test]
fn metadata_document_over_the_size_bound_is_refused() {
    let site = TestSite::new("serve_oauth_cimd_big");
    let big = DocServer::start(|url| {
        let mut doc: Value = serde_json::from_str(&document(url)).unwrap();
        doc["padding"] = json!("x".repeat(20_000));
        Doc::Body(doc.to_string())
    });
    let endless = DocServer::start(|_| Doc::Endless);
    let (s, base) = serve_documents(&site, &[&big.addr, &endless.addr]);
    refused_page(&s, &base, &big.url(), "is over 16384 bytes");
    // Cut at the size bound (its message), not at the time bound.
    refused_page(&s, &base, &endless.url(), "is over 16384 bytes");
}

#[test]
fn metadata_document_that_trickles_is_cut_off_at_the_time_bound() {
    let site = TestSite::new("serve_oauth_cimd_slow");
    let slow = DocServer::start(|_| Doc::Drip);
    let (s, base) = serve_documents(&site, &[&slow.addr]);
    let started = std::time::Instant::now();
    refused_page(&s, &base, &slow.url(), "took longer than 5 s");
    let took = started.elapsed();
    assert!(took >= std::time::Duration::from_secs(5), "{took:?}");
    assert!(took < std::time::Duration::from_secs(10), "{took:?}");
}

#[test]
fn metadata_document_naming_another_client_id_is_refused_and_not_cached() {
    let site = TestSite::new("serve_oauth_cimd_other_id");
    let liar = DocServer::start(|_| Doc::Body(document("https://app.example/client.json")));
    let (s, base) = serve_documents(&site, &[&liar.addr]);
    refused_page(&s, &base, &liar.url(), "not its own URL");
    assert_eq!(
        site.sql("SELECT COUNT(*) FROM oauth_clients").trim(),
        "0",
        "nothing was cached"
    );
}

/// Keys pasted on the consent form pay before argon2 checks them, per client
/// network: a hundred addresses pasting ten wrong keys each had all been
/// checked (the limit was per address, and spent only after a refusal).
#[test]
fn keys_pasted_on_the_consent_form_are_limited_per_network_before_they_are_checked() {
    let site = TestSite::new("serve_oauth_pasted");
    let (good, _) = site.mint("viewer");
    let addr = free_addr();
    let base = format!("http://{addr}");
    let s = Serve::start_on(
        &site,
        &addr,
        &["--public-url", &base, "--behind-proxy", "127.0.0.1"],
    );
    let client_id = register(&s.addr);
    let c = consent(&s.addr, &base, &client_id, "content:read");
    // The last character changed (to one it is not).
    let last = if good.ends_with('x') { 'y' } else { 'x' };
    let bad = format!("{}{last}", &good[..good.len() - 1]);
    let paste = |key: &str, from: &str| {
        form_post(
            &s.addr,
            "/authorize",
            &[
                ("Cookie", &c.cookie),
                ("Origin", &base),
                ("X-Forwarded-For", from),
            ],
            &[
                ("request", &c.request),
                ("csrf", &c.csrf),
                ("api_key", key),
                ("decision", "approve"),
            ],
        )
        .status
    };
    let statuses: Vec<u16> = (1..=11)
        .map(|i| paste(&bad, &format!("192.0.2.{i}")))
        .collect();
    assert!(statuses[..10].iter().all(|s| *s == 400), "{statuses:?}");
    assert_eq!(statuses[10], 429, "{statuses:?}");
    // Refused before the check: even the right key, from that network.
    assert_eq!(paste(&good, "192.0.2.99"), 429);
    assert_eq!(paste(&good, "198.51.100.7"), 303, "another network");
}

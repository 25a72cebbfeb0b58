//! OAuth's core against a real database (SQLite, or PostgreSQL with
//! `GATEHOUSE_TEST_PG_URL`): each test is an attack on the code flow or the
//! tokens, named after what it pins. The HTTP routes are tested end to end
//! in the CLI's `serve_oauth` tests.

use crate::common::fresh_site;
use gatehouse_core::access::keys::{self, RawKey};
use gatehouse_core::access::oauth::client::{self, Client, Known};
use gatehouse_core::access::oauth::flow::{self, AuthorizeParams, Issuer, TokenRequest, Tokens};
use gatehouse_core::access::oauth::{self, Secret, grants};
use gatehouse_core::access::permissions::{Action, Role};
use gatehouse_core::error::Code;
use gatehouse_core::site::Site;
use serde_json::json;

const VERIFIER: &str = "dBjftJeZ4CVP-mB92K27uhbUJU1p1r_wW1gFWFOEjXk";
const REDIRECT: &str = "http://127.0.0.1:9/callback";

fn issuer() -> Issuer {
    Issuer::new("http://127.0.0.1:8808").unwrap()
}

async fn public_client(site: &Site) -> Client {
    let reg = client::register(
        &site.store,
        &json!({"client_name": "Test client", "redirect_uris": [REDIRECT],
                "token_endpoint_auth_method": "none"}),
        "127.0.0.1",
    )
    .await
    .unwrap();
    match client::find(&site.store, &reg.client_id).await.unwrap() {
        Known::Client(c) => c,
        Known::FetchDocument(_) => unreachable!(),
    }
}

fn params(client: &Client, scope: &str) -> AuthorizeParams {
    AuthorizeParams {
        response_type: Some("code".into()),
        client_id: Some(client.id.clone()),
        redirect_uri: Some(REDIRECT.into()),
        code_challenge: Some(flow::s256(VERIFIER)),
        code_challenge_method: Some("S256".into()),
        state: Some("st4te".into()),
        scope: Some(scope.into()),
        resource: Some(issuer().resource),
    }
}

fn query(url: &str, name: &str) -> Option<String> {
    url::Url::parse(url)
        .unwrap()
        .query_pairs()
        .find(|(k, _)| k == name)
        .map(|(_, v)| v.into_owned())
}

/// A key with `roles`, and a code approved with it for `scope`.
async fn approved(site: &Site, client: &Client, roles: &[Role], scope: &str) -> (String, RawKey) {
    let key = keys::mint(&site.store, "test", "oauth", roles, None)
        .await
        .unwrap()
        .key;
    let checked = flow::check_authorize(&issuer(), client, &params(client, scope)).unwrap();
    let pending = flow::begin_consent(&site.store, &checked).await.unwrap();
    let csrf = pending.csrf.expose().to_string();
    let answered = flow::approve(
        &site.store,
        &issuer(),
        &pending.id,
        &csrf,
        Some(&csrf),
        &key,
        [127, 0, 0, 1].into(),
    )
    .await
    .unwrap();
    assert_eq!(query(&answered.redirect, "state").as_deref(), Some("st4te"));
    assert_eq!(
        query(&answered.redirect, "iss").as_deref(),
        Some("http://127.0.0.1:8808")
    );
    (query(&answered.redirect, "code").unwrap(), key)
}

fn code_request(client: &Client, code: &str) -> TokenRequest {
    TokenRequest {
        grant_type: Some("authorization_code".into()),
        code: Some(Secret::new(code)),
        redirect_uri: Some(REDIRECT.into()),
        code_verifier: Some(VERIFIER.into()),
        resource: Some(issuer().resource),
        client_id: Some(client.id.clone()),
        ..TokenRequest::default()
    }
}

fn refresh_request(client: &Client, tokens: &Tokens) -> TokenRequest {
    TokenRequest {
        grant_type: Some("refresh_token".into()),
        refresh_token: Some(tokens.refresh_token.clone()),
        resource: Some(issuer().resource),
        client_id: Some(client.id.clone()),
        ..TokenRequest::default()
    }
}

#[tokio::test]
async fn code_flow_yields_the_keys_actor_narrowed_to_the_scopes() {
    let (_tmp, site) = fresh_site("oauth_flow").await;
    let client = public_client(&site).await;
    let (code, _key) = approved(&site, &client, &[Role::Editor], "content:read").await;
    let tokens = flow::token(&site.store, &issuer(), &code_request(&client, &code), "t")
        .await
        .unwrap();
    let who = flow::check_access(&site.store, &issuer(), &tokens.access_token)
        .await
        .unwrap();
    assert!(who.actor.may(Action::ContentReadDraft));
    // The key may publish; the token was not given the scope.
    assert!(!who.actor.may(Action::ContentPublish));
    let e = who.actor.check(Action::ContentPublish).unwrap_err();
    assert_eq!(e.code, Code::OAUTH_SCOPE_INSUFFICIENT);
    assert_eq!(grants::list(&site.store).await.unwrap().len(), 1);
}

#[tokio::test]
async fn pkce_missing_or_plain_is_refused_on_a_page_never_sent_back() {
    let (_tmp, site) = fresh_site("oauth_pkce").await;
    let client = public_client(&site).await;
    let mut missing = params(&client, "content:read");
    missing.code_challenge = None;
    let mut plain = params(&client, "content:read");
    plain.code_challenge_method = Some("plain".into());
    plain.code_challenge = Some(VERIFIER.into());
    let mut absent_method = params(&client, "content:read");
    absent_method.code_challenge_method = None;
    for p in [missing, plain, absent_method] {
        let e = flow::check_authorize(&issuer(), &client, &p).unwrap_err();
        assert_eq!(e.code, Code::OAUTH_REQUEST_INVALID);
        assert_eq!(oauth::error_name(&e), "invalid_request");
    }
}

#[tokio::test]
async fn redirect_uri_not_registered_is_shown_not_followed() {
    let (_tmp, site) = fresh_site("oauth_redirect").await;
    let client = public_client(&site).await;
    let mut p = params(&client, "content:read");
    p.redirect_uri = Some("http://127.0.0.1:9/callback/other".into());
    let e = flow::check_authorize(&issuer(), &client, &p).unwrap_err();
    assert_eq!(e.code, Code::OAUTH_REDIRECT_INVALID);
}

#[tokio::test]
async fn resource_missing_or_foreign_is_refused() {
    let (_tmp, site) = fresh_site("oauth_resource").await;
    let client = public_client(&site).await;
    for r in [None, Some("https://other.example/mcp".to_string())] {
        let mut p = params(&client, "content:read");
        p.resource = r;
        let e = flow::check_authorize(&issuer(), &client, &p).unwrap_err();
        assert_eq!(oauth::error_name(&e), "invalid_target");
    }
}

#[tokio::test]
async fn code_reused_is_refused_and_revokes_the_first_token() {
    let (_tmp, site) = fresh_site("oauth_code_reuse").await;
    let client = public_client(&site).await;
    let (code, _) = approved(&site, &client, &[Role::Viewer], "content:read").await;
    let first = flow::token(&site.store, &issuer(), &code_request(&client, &code), "t")
        .await
        .unwrap();
    flow::check_access(&site.store, &issuer(), &first.access_token)
        .await
        .unwrap();
    let again = flow::token(&site.store, &issuer(), &code_request(&client, &code), "t")
        .await
        .unwrap_err();
    assert_eq!(again.code, Code::OAUTH_GRANT_INVALID);
    let e = flow::check_access(&site.store, &issuer(), &first.access_token)
        .await
        .unwrap_err();
    assert_eq!(e.code, Code::OAUTH_TOKEN_INVALID);
    let e = flow::token(
        &site.store,
        &issuer(),
        &refresh_request(&client, &first),
        "t",
    )
    .await
    .unwrap_err();
    assert_eq!(e.code, Code::OAUTH_GRANT_INVALID);
}

#[tokio::test]
async fn wrong_verifier_and_other_client_are_refused() {
    let (_tmp, site) = fresh_site("oauth_verifier").await;
    let client = public_client(&site).await;
    let other = public_client(&site).await;
    let (code, _) = approved(&site, &client, &[Role::Viewer], "content:read").await;
    let mut bad = code_request(&client, &code);
    bad.code_verifier = Some("x".repeat(43));
    let e = flow::token(&site.store, &issuer(), &bad, "t")
        .await
        .unwrap_err();
    assert_eq!(e.code, Code::OAUTH_GRANT_INVALID);
    let e = flow::token(&site.store, &issuer(), &code_request(&other, &code), "t")
        .await
        .unwrap_err();
    assert_eq!(e.code, Code::OAUTH_GRANT_INVALID);
    // Neither attempt spent the code.
    flow::token(&site.store, &issuer(), &code_request(&client, &code), "t")
        .await
        .unwrap();
}

#[tokio::test]
async fn refresh_rotates_and_a_reused_refresh_token_revokes_the_grant() {
    let (_tmp, site) = fresh_site("oauth_refresh_reuse").await;
    let client = public_client(&site).await;
    let (code, _) = approved(&site, &client, &[Role::Viewer], "content:read").await;
    let first = flow::token(&site.store, &issuer(), &code_request(&client, &code), "t")
        .await
        .unwrap();
    let second = flow::token(
        &site.store,
        &issuer(),
        &refresh_request(&client, &first),
        "t",
    )
    .await
    .unwrap();
    assert_ne!(first.refresh_token, second.refresh_token);
    flow::check_access(&site.store, &issuer(), &second.access_token)
        .await
        .unwrap();
    // The spent refresh token comes back (stolen): the whole grant goes.
    let e = flow::token(
        &site.store,
        &issuer(),
        &refresh_request(&client, &first),
        "t",
    )
    .await
    .unwrap_err();
    assert_eq!(e.code, Code::OAUTH_GRANT_INVALID);
    for t in [&first.access_token, &second.access_token] {
        let e = flow::check_access(&site.store, &issuer(), t)
            .await
            .unwrap_err();
        assert_eq!(e.code, Code::OAUTH_TOKEN_INVALID);
    }
    let e = flow::token(
        &site.store,
        &issuer(),
        &refresh_request(&client, &second),
        "t",
    )
    .await
    .unwrap_err();
    assert_eq!(e.code, Code::OAUTH_GRANT_INVALID);
    let listed = grants::list(&site.store).await.unwrap();
    assert!(listed[0].revoked_at.is_some());
}

#[tokio::test]
async fn tokens_for_another_resource_are_neither_accepted_nor_refreshed() {
    let (_tmp, site) = fresh_site("oauth_audience").await;
    let client = public_client(&site).await;
    let (code, _) = approved(&site, &client, &[Role::Viewer], "content:read").await;
    let tokens = flow::token(&site.store, &issuer(), &code_request(&client, &code), "t")
        .await
        .unwrap();
    // The same store behind another public URL is another resource.
    let elsewhere = Issuer::new("http://127.0.0.1:9999").unwrap();
    let e = flow::check_access(&site.store, &elsewhere, &tokens.access_token)
        .await
        .unwrap_err();
    assert_eq!(e.code, Code::OAUTH_TOKEN_INVALID);
    // Nor does that server rotate its refresh token, named resource or not.
    for resource in [None, Some(elsewhere.resource.clone())] {
        let req = TokenRequest {
            resource,
            ..refresh_request(&client, &tokens)
        };
        let e = flow::token(&site.store, &elsewhere, &req, "t")
            .await
            .unwrap_err();
        assert_eq!(e.code, Code::OAUTH_GRANT_INVALID, "{e:?}");
    }
    // Still unspent for the server that issued it.
    flow::token(
        &site.store,
        &issuer(),
        &refresh_request(&client, &tokens),
        "t",
    )
    .await
    .unwrap();
}

#[tokio::test]
async fn revoking_the_key_ends_the_grant_and_its_refresh_is_invalid_grant() {
    let (_tmp, site) = fresh_site("oauth_key_revoked").await;
    let client = public_client(&site).await;
    let (code, key) = approved(&site, &client, &[Role::Viewer], "content:read").await;
    let tokens = flow::token(&site.store, &issuer(), &code_request(&client, &code), "t")
        .await
        .unwrap();
    let id = keys::verify(&site.store, &key).await.unwrap().id;
    keys::revoke(&site.store, "test", &id).await.unwrap();
    let e = flow::check_access(&site.store, &issuer(), &tokens.access_token)
        .await
        .unwrap_err();
    assert_eq!(e.code, Code::ACTOR_API_KEY_INVALID);
    let e = flow::token(
        &site.store,
        &issuer(),
        &refresh_request(&client, &tokens),
        "t",
    )
    .await
    .unwrap_err();
    // `invalid_grant`, not `server_error`: the client must ask again, not
    // retry; and the key is not named to it.
    assert_eq!(e.code, Code::OAUTH_GRANT_INVALID);
    assert_eq!(oauth::error_name(&e), "invalid_grant");
    assert!(!e.message.contains(&id), "{}", e.message);
}

#[tokio::test]
async fn admin_revocation_ends_the_grant() {
    let (_tmp, site) = fresh_site("oauth_admin_revoke").await;
    let client = public_client(&site).await;
    let (code, _) = approved(&site, &client, &[Role::Viewer], "content:read").await;
    let tokens = flow::token(&site.store, &issuer(), &code_request(&client, &code), "t")
        .await
        .unwrap();
    let id = grants::list(&site.store).await.unwrap()[0].id.clone();
    grants::revoke(&site.store, "admin", &id).await.unwrap();
    let e = flow::check_access(&site.store, &issuer(), &tokens.access_token)
        .await
        .unwrap_err();
    assert_eq!(e.code, Code::OAUTH_TOKEN_INVALID);
}

#[tokio::test]
async fn consent_post_without_the_csrf_token_is_refused() {
    let (_tmp, site) = fresh_site("oauth_csrf").await;
    let client = public_client(&site).await;
    let key = keys::mint(&site.store, "test", "k", &[Role::Viewer], None)
        .await
        .unwrap()
        .key;
    let checked =
        flow::check_authorize(&issuer(), &client, &params(&client, "content:read")).unwrap();
    let pending = flow::begin_consent(&site.store, &checked).await.unwrap();
    let csrf = pending.csrf.expose().to_string();
    // A cross-site form has no cookie; a forged one has no matching token.
    for (form, cookie) in [
        (csrf.as_str(), None),
        ("", Some("")),
        ("forged", Some("forged")),
    ] {
        let e = flow::approve(
            &site.store,
            &issuer(),
            &pending.id,
            form,
            cookie,
            &key,
            [127, 0, 0, 1].into(),
        )
        .await
        .unwrap_err();
        assert_eq!(e.code, Code::OAUTH_CONSENT_INVALID);
    }
}

#[tokio::test]
async fn scopes_the_key_cannot_use_are_not_granted() {
    let (_tmp, site) = fresh_site("oauth_scope_narrow").await;
    let client = public_client(&site).await;
    let (code, _) = approved(
        &site,
        &client,
        &[Role::Viewer],
        "content:read content:publish",
    )
    .await;
    let tokens = flow::token(&site.store, &issuer(), &code_request(&client, &code), "t")
        .await
        .unwrap();
    assert_eq!(tokens.scope.to_string(), "content:read");
}

/// Moves every stored expiry of `table` into the past (tests only: app SQL
/// lives in `store`).
async fn expire_all(site: &Site, table: &str) {
    sqlx::query(sqlx::AssertSqlSafe(format!(
        "UPDATE {table} SET expires_at = 1"
    )))
    .execute(site.store.pool())
    .await
    .unwrap();
}

#[tokio::test]
async fn expired_access_token_is_refused() {
    let (_tmp, site) = fresh_site("oauth_expired_access").await;
    let client = public_client(&site).await;
    let (code, _) = approved(&site, &client, &[Role::Viewer], "content:read").await;
    let tokens = flow::token(&site.store, &issuer(), &code_request(&client, &code), "t")
        .await
        .unwrap();
    expire_all(&site, "oauth_tokens").await;
    let e = flow::check_access(&site.store, &issuer(), &tokens.access_token)
        .await
        .unwrap_err();
    assert_eq!(e.code, Code::OAUTH_TOKEN_INVALID);
    assert!(e.message.contains("expired"), "{}", e.message);
    let e = flow::token(
        &site.store,
        &issuer(),
        &refresh_request(&client, &tokens),
        "t",
    )
    .await
    .unwrap_err();
    assert_eq!(e.code, Code::OAUTH_GRANT_INVALID);
}

#[tokio::test]
async fn expired_code_is_refused() {
    let (_tmp, site) = fresh_site("oauth_expired_code").await;
    let client = public_client(&site).await;
    let (code, _) = approved(&site, &client, &[Role::Viewer], "content:read").await;
    expire_all(&site, "oauth_codes").await;
    let e = flow::token(&site.store, &issuer(), &code_request(&client, &code), "t")
        .await
        .unwrap_err();
    assert_eq!(e.code, Code::OAUTH_GRANT_INVALID);
}

#[tokio::test]
async fn expired_consent_is_refused_and_audited() {
    let (_tmp, site) = fresh_site("oauth_expired_consent").await;
    let client = public_client(&site).await;
    let key = keys::mint(&site.store, "test", "k", &[Role::Viewer], None)
        .await
        .unwrap()
        .key;
    let checked =
        flow::check_authorize(&issuer(), &client, &params(&client, "content:read")).unwrap();
    let pending = flow::begin_consent(&site.store, &checked).await.unwrap();
    expire_all(&site, "oauth_requests").await;
    let csrf = pending.csrf.expose().to_string();
    let e = flow::approve(
        &site.store,
        &issuer(),
        &pending.id,
        &csrf,
        Some(&csrf),
        &key,
        [127, 0, 0, 1].into(),
    )
    .await
    .unwrap_err();
    assert_eq!(e.code, Code::OAUTH_CONSENT_INVALID);
    let rows = gatehouse_core::access::audit_view::matching(
        &site.store,
        &gatehouse_core::access::audit_view::AuditFilter::default(),
    )
    .await
    .unwrap();
    assert!(
        rows.iter().any(|r| r.action == "oauth.expire"),
        "the expiry is audited"
    );
}

/// A long request (an open `subscriptions/listen` stream, a long call)
/// re-reads its actor on every action: it ends with its grant.
#[tokio::test]
async fn a_long_request_ends_when_its_grant_is_revoked() {
    use gatehouse_core::access::actor::Refresher;
    let (_tmp, site) = fresh_site("oauth_long_request").await;
    let client = public_client(&site).await;
    let (code, _) = approved(&site, &client, &[Role::Viewer], "content:read").await;
    let tokens = flow::token(&site.store, &issuer(), &code_request(&client, &code), "t")
        .await
        .unwrap();
    let t = flow::check_access(&site.store, &issuer(), &tokens.access_token)
        .await
        .unwrap();
    let generation = gatehouse_core::store::access::generation(&site.store)
        .await
        .unwrap();
    let r = Refresher::seeded_token(
        t.actor,
        generation,
        t.key_expires_at,
        t.grant_id.clone(),
        t.token_expires_at,
    );
    let before = r.refresh(&site.store).await.unwrap();
    assert!(before.scopes().is_some());
    grants::revoke(&site.store, "admin", &t.grant_id)
        .await
        .unwrap();
    let e = r.refresh(&site.store).await.unwrap_err();
    assert_eq!(e.code, Code::OAUTH_TOKEN_INVALID);
}

/// An expired code or refresh token is refused and the expiry audited; an
/// expired refresh token presented again is still "expired", never taken
/// for a replay that would revoke the grant.
#[tokio::test]
async fn expired_code_and_refresh_token_are_audited_and_a_retried_expired_refresh_is_no_replay() {
    let (_tmp, site) = fresh_site("oauth_expiry_audited").await;
    let client = public_client(&site).await;
    let expiries = |site: &Site| {
        let store = site.store.clone();
        async move {
            gatehouse_core::access::audit_view::matching(
                &store,
                &gatehouse_core::access::audit_view::AuditFilter::default(),
            )
            .await
            .unwrap()
            .into_iter()
            .filter(|r| r.action == "oauth.expire")
            .map(|r| {
                let d: serde_json::Value = serde_json::from_str(&r.detail).unwrap();
                d["what"].as_str().unwrap_or("").to_string()
            })
            .collect::<std::collections::BTreeSet<_>>()
            .into_iter()
            .collect::<Vec<_>>()
        }
    };
    let (code, _) = approved(&site, &client, &[Role::Viewer], "content:read").await;
    expire_all(&site, "oauth_codes").await;
    let e = flow::token(&site.store, &issuer(), &code_request(&client, &code), "t")
        .await
        .unwrap_err();
    assert!(e.message.contains("expired"), "{}", e.message);
    assert_eq!(expiries(&site).await, ["authorization code"]);

    let (code, _) = approved(&site, &client, &[Role::Viewer], "content:read").await;
    let tokens = flow::token(&site.store, &issuer(), &code_request(&client, &code), "t")
        .await
        .unwrap();
    expire_all(&site, "oauth_tokens").await;
    for _ in 0..2 {
        let e = flow::token(
            &site.store,
            &issuer(),
            &refresh_request(&client, &tokens),
            "t",
        )
        .await
        .unwrap_err();
        assert_eq!(e.code, Code::OAUTH_GRANT_INVALID);
        assert!(e.message.contains("expired"), "{}", e.message);
    }
    assert_eq!(
        expiries(&site).await,
        ["authorization code", "refresh token"]
    );
    let live = grants::list(&site.store).await.unwrap();
    assert!(live.iter().all(|g| g.revoked_at.is_none()), "{live:?}");
}

/// A flood of registrations from many addresses (the HTTP limit is per
/// network) must not lock new clients out until the flood's entries lapse:
/// at the bound, the oldest unused registrations make room.
#[tokio::test]
async fn a_registration_flood_pushes_out_its_own_entries_not_new_clients() {
    let (_tmp, site) = fresh_site("oauth_registration_flood").await;
    let body =
        json!({"redirect_uris": ["https://evil.example/cb"], "token_endpoint_auth_method": "none"});
    let mut flood = Vec::new();
    for i in 0..oauth::MAX_UNUSED_REGISTRATIONS {
        let from = format!("198.51.{}.{}", i / 250, i % 250);
        flood.push(
            client::register(&site.store, &body, &from)
                .await
                .unwrap()
                .client_id,
        );
        if i == 0 {
            // Registration times are milliseconds: the first is then the one
            // oldest, not one of several made in the same millisecond.
            tokio::time::sleep(std::time::Duration::from_millis(5)).await;
        }
    }
    // The bound is reached; a new client still registers and works.
    let newcomer = public_client(&site).await;
    let checked = flow::check_authorize(&issuer(), &newcomer, &params(&newcomer, "content:read"));
    assert!(checked.is_ok(), "{checked:?}");
    // The flood's oldest entry made room; its newest is still there.
    let oldest = client::find(&site.store, &flood[0]).await;
    assert!(oldest.is_err(), "the oldest unused registration is gone");
    assert!(matches!(
        client::find(&site.store, flood.last().unwrap())
            .await
            .unwrap(),
        Known::Client(_)
    ));
}

/// RFC 7591 makes `grant_types` and `response_types` arrays: a bare string
/// is refused, not read as a list of one.
#[tokio::test]
async fn registration_types_given_as_strings_are_refused() {
    let (_tmp, site) = fresh_site("oauth_registration_types").await;
    for (field, value) in [
        ("grant_types", "client_credentials"),
        ("grant_types", "authorization_code"),
        ("response_types", "token"),
        ("response_types", "code"),
    ] {
        let mut body = json!({"redirect_uris": [REDIRECT], "token_endpoint_auth_method": "none"});
        body[field] = json!(value);
        let e = client::register(&site.store, &body, "127.0.0.1")
            .await
            .unwrap_err();
        assert_eq!(e.code, Code::OAUTH_CLIENT_INVALID, "{field}: {value}");
    }
}

/// A client identified by a metadata document keeps refreshing once its
/// cached document lapses (an hour, as long as an access token lives): the
/// document decides redirect URIs at `/authorize`, and the grant is bound to
/// the client id and redirect it was made for. The first refresh after the
/// hour had failed with `invalid_client`, sending the user back to consent.
#[tokio::test]
async fn a_document_client_refreshes_after_its_cached_document_lapses() {
    let (_tmp, site) = fresh_site("oauth_document_lapsed").await;
    let url = "https://client.example/oauth/client.json";
    let body = json!({"client_id": url, "client_name": "Doc client", "redirect_uris": [REDIRECT],
                      "token_endpoint_auth_method": "none"});
    let client = client::parse_document(url, body.to_string().as_bytes()).unwrap();
    client::cache_document(&site.store, &client).await.unwrap();
    let (code, _) = approved(&site, &client, &[Role::Viewer], "content:read").await;
    let tokens = flow::token(&site.store, &issuer(), &code_request(&client, &code), "t")
        .await
        .unwrap();
    expire_all(&site, "oauth_clients").await;
    assert!(matches!(
        client::find(&site.store, url).await.unwrap(),
        Known::FetchDocument(_)
    ));
    let refreshed = flow::token(
        &site.store,
        &issuer(),
        &refresh_request(&client, &tokens),
        "t",
    )
    .await
    .unwrap();
    flow::check_access(&site.store, &issuer(), &refreshed.access_token)
        .await
        .unwrap();
    // A document never cached is still unknown at /token.
    let other = client::parse_document(
        "https://other.example/client.json",
        json!({"client_id": "https://other.example/client.json", "redirect_uris": [REDIRECT],
               "token_endpoint_auth_method": "none"})
        .to_string()
        .as_bytes(),
    )
    .unwrap();
    let err = flow::token(
        &site.store,
        &issuer(),
        &refresh_request(&other, &tokens),
        "t",
    )
    .await
    .unwrap_err();
    assert_eq!(err.code, Code::OAUTH_CLIENT_INVALID, "{err:?}");
}

/// Pending authorization requests are bounded as registrations are: a
/// flood from many networks (each under its own limit) had stored every
/// request it made for their ten minutes. Past the bound the oldest go,
/// and the newest, a real user's among them, can still be answered.
#[tokio::test]
async fn pending_authorization_requests_are_bounded_and_the_newest_kept() {
    let (_tmp, site) = fresh_site("oauth_request_flood").await;
    let client = public_client(&site).await;
    let key = keys::mint(&site.store, "test", "k", &[Role::Viewer], None)
        .await
        .unwrap()
        .key;
    let checked =
        flow::check_authorize(&issuer(), &client, &params(&client, "content:read")).unwrap();
    let first = flow::begin_consent(&site.store, &checked).await.unwrap();
    for _ in 0..oauth::MAX_PENDING_REQUESTS + 10 {
        flow::begin_consent(&site.store, &checked).await.unwrap();
    }
    let last = flow::begin_consent(&site.store, &checked).await.unwrap();
    let count = gatehouse_core::store::oauth::count_requests(&site.store)
        .await
        .unwrap();
    assert_eq!(count, oauth::MAX_PENDING_REQUESTS);
    let answer = |p: &flow::Pending| {
        let csrf = p.csrf.expose().to_string();
        let (store, id, key) = (site.store.clone(), p.id.clone(), key.clone());
        async move {
            flow::approve(
                &store,
                &issuer(),
                &id,
                &csrf,
                Some(&csrf),
                &key,
                [127, 0, 0, 1].into(),
            )
            .await
        }
    };
    assert_eq!(
        answer(&first).await.unwrap_err().code,
        Code::OAUTH_CONSENT_INVALID
    );
    answer(&last).await.unwrap();
}

/// Cached metadata documents no grant has used are bounded too: documents
/// at ever new URLs of a host that serves them had each been kept an hour.
#[tokio::test]
async fn cached_documents_nobody_used_are_bounded() {
    let (_tmp, site) = fresh_site("oauth_document_flood").await;
    for i in 0..oauth::MAX_UNUSED_DOCUMENTS + 5 {
        let url = format!("https://app.example/clients/{i}.json");
        let doc = json!({"client_id": url, "client_name": "Flood", "redirect_uris": [REDIRECT]});
        let c = client::parse_document(&url, &serde_json::to_vec(&doc).unwrap()).unwrap();
        client::cache_document(&site.store, &c).await.unwrap();
    }
    let cached = |i: i64| {
        let store = site.store.clone();
        async move {
            let url = format!("https://app.example/clients/{i}.json");
            gatehouse_core::store::oauth::get_client(&store, &url)
                .await
                .unwrap()
                .is_some()
        }
    };
    // The five oldest made room; the rest, the newest among them, stay.
    for i in 0..5 {
        assert!(!cached(i).await, "document {i} outlived the bound");
    }
    assert!(cached(5).await);
    assert!(cached(oauth::MAX_UNUSED_DOCUMENTS + 4).await);
}

//! The authorization code flow with PKCE, and the token check of every
//! request.
//!
//! 1. [`check_authorize`]: an authorization request is checked against its
//!    client (exact redirect URI, PKCE S256 only, `resource` naming this
//!    server, known scopes). Its errors are shown to the person, never sent
//!    to the redirect URI of a client nobody has approved yet.
//! 2. [`begin_consent`] keeps the request, with a CSRF token, for the consent
//!    page; [`approve`] (an API key pasted) or [`deny`] answers it once.
//! 3. [`exchange`]: a code (single use, [`super::CODE_TTL_MS`]) becomes a
//!    grant with an access and a refresh token, if the verifier, client,
//!    redirect URI and resource all match. A replayed code revokes the grant
//!    its first use made.
//! 4. [`refresh`] rotates: the old refresh token is spent, a new pair is
//!    issued; presenting a spent one revokes the whole grant.
//! 5. [`check_access`]: a bearer token on `/mcp` becomes its principal's
//!    actor (a key's or a user's), narrowed to the grant's scopes, if it is
//!    an unexpired access token of a live grant for this resource and the
//!    principal still stands.

use base64::Engine;
use serde_json::json;
use sha2::{Digest, Sha256};
use url::Url;

use super::client::{self, Client};
use super::{
    ACCESS_PREFIX, ACCESS_TTL_MS, CODE_PREFIX, CODE_TTL_MS, Principal, REFRESH_PREFIX,
    REFRESH_TTL_MS, REQUEST_TTL_MS, ScopeSet, Secret, Standing, oauth_error, stand,
};
use crate::access::actor::Actor;
use crate::access::audit::{self, AuditAction, AuditActor, AuditEntry};
use crate::access::keys::{self, RawKey};
use crate::access::permissions::allowed;
use crate::error::{Code, Error, Result};
use crate::store::Store;
use crate::store::oauth::{self as sql, CodeRow, GrantRow, RequestRow};
use crate::time::now_ms;

/// Who this server is: the issuer (from `--public-url`, never from a
/// request's `Host`) and the one resource it protects.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Issuer {
    /// `https://host[:port]`, no trailing slash.
    pub issuer: String,
    /// The MCP endpoint: `{issuer}/mcp`.
    pub resource: String,
}

impl Issuer {
    pub fn new(public_url: &str) -> Result<Issuer> {
        let bad = |why: &str| {
            Error::invalid(
                Code::INPUT_INVALID,
                format!("the public URL (--public-url) {public_url:?} {why}"),
                "give the origin clients reach this server at, e.g. https://mcp.example.com",
            )
        };
        let url = Url::parse(public_url).map_err(|_| bad("is not a URL"))?;
        let Some(host) = url.host() else {
            return Err(bad("has no host"));
        };
        if url.scheme() != "https" && !(url.scheme() == "http" && client::is_loopback_host(&host)) {
            return Err(bad("must be https (http only for a loopback address)"));
        }
        if url.query().is_some() || url.fragment().is_some() || !url.username().is_empty() {
            return Err(bad("must be an origin only"));
        }
        // The routes are served at the root: an issuer with a path would
        // have its metadata at a place this server does not answer.
        if url.path() != "/" {
            return Err(bad(
                "must be an origin without a path (a proxy in front must map the whole origin)",
            ));
        }
        let issuer = url.as_str().trim_end_matches('/').to_string();
        Ok(Issuer {
            resource: format!("{issuer}/mcp"),
            issuer,
        })
    }

    /// Whether a `resource` parameter names this server (RFC 8707).
    pub fn is_resource(&self, resource: &str) -> bool {
        resource.trim_end_matches('/') == self.resource
    }
}

/// The parameters of an authorization request, as sent.
#[derive(Debug, Clone, Default)]
pub struct AuthorizeParams {
    pub response_type: Option<String>,
    pub client_id: Option<String>,
    pub redirect_uri: Option<String>,
    pub code_challenge: Option<String>,
    pub code_challenge_method: Option<String>,
    pub state: Option<String>,
    pub scope: Option<String>,
    pub resource: Option<String>,
}

/// A checked authorization request.
#[derive(Debug, Clone)]
pub struct Checked {
    pub client: Client,
    pub redirect_uri: String,
    pub state: Option<String>,
    pub challenge: String,
    pub resource: String,
    pub scopes: ScopeSet,
}

/// The redirect URI with `params` and `iss` (RFC 9207) added.
pub fn redirect_with(uri: &str, params: &[(&str, &str)], issuer: &Issuer) -> String {
    let mut url = Url::parse(uri).expect("redirect URIs were checked");
    {
        let mut q = url.query_pairs_mut();
        for (k, v) in params {
            q.append_pair(k, v);
        }
        q.append_pair("iss", &issuer.issuer);
    }
    url.to_string()
}

/// The redirect URI with an error, for a person who saw the client's
/// consent page and declined it.
fn error_redirect(
    uri: &str,
    state: Option<&str>,
    error: &str,
    why: &str,
    issuer: &Issuer,
) -> String {
    let mut params = vec![("error", error), ("error_description", why)];
    if let Some(s) = state {
        params.push(("state", s));
    }
    redirect_with(uri, &params, issuer)
}

/// Whether a PKCE value (challenge or verifier) has the RFC 7636 shape.
fn pkce_shape(v: &str) -> bool {
    (43..=128).contains(&v.len())
        && v.bytes()
            .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'-' | b'.' | b'_' | b'~'))
}

/// The S256 challenge of a verifier.
pub fn s256(verifier: &str) -> String {
    base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(Sha256::digest(verifier.as_bytes()))
}

/// Checks an authorization request against its client; see the module doc.
///
/// Every refusal is shown to the person, never sent to the redirect URI: a
/// client registers itself (or names a metadata document its author wrote),
/// so before anyone approved it, an error sent back to its redirect URI would
/// make this server an open redirector for any URI (RFC 9700, 4.11.2).
pub fn check_authorize(issuer: &Issuer, client: &Client, p: &AuthorizeParams) -> Result<Checked> {
    let redirect_uri = match &p.redirect_uri {
        Some(r) => r.clone(),
        None if client.redirect_uris.len() == 1 => client.redirect_uris[0].clone(),
        None => {
            return Err(oauth_error(
                Code::OAUTH_REDIRECT_INVALID,
                "invalid_request",
                "redirect_uri is missing and the client registered more than one",
            ));
        }
    };
    if !client.redirect_uris.contains(&redirect_uri) {
        return Err(oauth_error(
            Code::OAUTH_REDIRECT_INVALID,
            "invalid_request",
            format!("the redirect URI {redirect_uri:?} is not registered for this client"),
        )
        .hint("redirect URIs must match one the client registered, exactly"));
    }
    let refused = |error: &str, why: &str| {
        oauth_error(
            Code::OAUTH_REQUEST_INVALID,
            error,
            format!("the application's request cannot be answered: {why} ({error})"),
        )
        .hint("tell the application's developer; nothing was sent back to the application")
    };
    if p.response_type.as_deref() != Some("code") {
        return Err(refused(
            "unsupported_response_type",
            "only response_type=code is supported",
        ));
    }
    let Some(challenge) = p.code_challenge.clone() else {
        return Err(refused(
            "invalid_request",
            "code_challenge is required (PKCE S256)",
        ));
    };
    if p.code_challenge_method.as_deref() != Some("S256") {
        return Err(refused(
            "invalid_request",
            "code_challenge_method must be S256 (plain is refused)",
        ));
    }
    if !pkce_shape(&challenge) || challenge.len() != 43 {
        return Err(refused(
            "invalid_request",
            "code_challenge is not an S256 challenge",
        ));
    }
    if p.state.as_ref().is_some_and(|s| s.len() > MAX_STATE_BYTES) {
        return Err(refused(
            "invalid_request",
            &format!("state is over {MAX_STATE_BYTES} bytes"),
        ));
    }
    let Some(resource) = p.resource.clone() else {
        return Err(refused(
            "invalid_target",
            "resource is required and must name this MCP server",
        ));
    };
    if !issuer.is_resource(&resource) {
        return Err(refused(
            "invalid_target",
            "resource does not name this MCP server",
        ));
    }
    let scopes = match ScopeSet::parse(p.scope.as_deref().unwrap_or("")) {
        Ok(s) => s,
        Err(e) => return Err(refused("invalid_scope", &e.message)),
    };
    let state = p.state.clone();
    Ok(Checked {
        client: client.clone(),
        redirect_uri,
        state,
        challenge,
        resource: issuer.resource.clone(),
        scopes,
    })
}

/// A request waiting for consent: its id and CSRF token go into the form.
#[derive(Debug)]
pub struct Pending {
    pub id: String,
    pub csrf: Secret,
}

/// The longest `state` kept with a request: clients send an opaque value of
/// tens of bytes; a bound keeps a stored request small.
pub const MAX_STATE_BYTES: usize = 1024;

/// Keeps a checked request for the consent page.
pub async fn begin_consent(store: &Store, c: &Checked) -> Result<Pending> {
    let now = now_ms();
    let id = super::random_id();
    let csrf = Secret::generate("");
    let row = RequestRow {
        id: id.clone(),
        csrf_hash: csrf.hash(),
        pair_hash: None,
        approved_key_id: None,
        approved_email: None,
        client_id: c.client.id.clone(),
        redirect_uri: c.redirect_uri.clone(),
        state: c.state.clone(),
        challenge: c.challenge.clone(),
        resource: c.resource.clone(),
        scopes: c.scopes.to_string(),
        created_at: now,
        expires_at: now + REQUEST_TTL_MS,
    };
    let mut tx = store.begin_write().await?;
    sql::insert_request(&mut tx, &row).await?;
    let gone = sql::bound_requests(&mut tx, super::MAX_PENDING_REQUESTS).await?;
    if gone > 0 {
        tracing::warn!(
            gone,
            "pending authorization requests at their bound; the oldest made room"
        );
    }
    tx.commit()
        .await
        .map_err(|e| Error::storage("committing an authorization request", e))?;
    Ok(Pending { id, csrf })
}

fn consent_invalid(message: &str) -> Error {
    Error::new(Code::OAUTH_CONSENT_INVALID, message.to_string())
        .hint("start again from the application that sent you here")
}

/// The pending request `id`, if the form's CSRF token is its own. The same
/// token must also come back in the cookie (`cookie_csrf`): a form posted
/// from another site has neither.
async fn pending(
    store: &Store,
    id: &str,
    form_csrf: &str,
    cookie_csrf: Option<&str>,
) -> Result<RequestRow> {
    if cookie_csrf != Some(form_csrf) || form_csrf.is_empty() {
        return Err(consent_invalid(
            "the consent form's CSRF token is missing or does not match",
        ));
    }
    let row = sql::get_request(store, id)
        .await?
        .ok_or_else(|| consent_invalid("this authorization request is unknown or was answered"))?;
    if row.csrf_hash != super::hash(form_csrf) {
        return Err(consent_invalid(
            "the consent form's CSRF token does not match",
        ));
    }
    Ok(row)
}

/// Where the person's browser goes after an answer.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Answered {
    pub redirect: String,
}

/// The request's client, for the consent page.
pub async fn request_client(store: &Store, id: &str) -> Result<Option<(RequestRow, Client)>> {
    let Some(row) = sql::get_request(store, id).await? else {
        return Ok(None);
    };
    // A document cached when the request began serves its ten minutes.
    match client::find_for_token(store, &row.client_id).await {
        Ok(c) => Ok(Some((row, c))),
        Err(e) if e.code == Code::OAUTH_CLIENT_INVALID => Ok(None),
        Err(e) => Err(e),
    }
}

/// Takes the request out for its one answer, auditing an expired one.
async fn take(store: &Store, id: &str) -> Result<(crate::store::Tx, RequestRow)> {
    let now = now_ms();
    let mut tx = store.begin_write().await?;
    let row = sql::take_request(&mut tx, id)
        .await?
        .ok_or_else(|| consent_invalid("this authorization request is unknown or was answered"))?;
    if row.expires_at <= now {
        audit::append(
            &mut tx,
            AuditEntry {
                actor: AuditActor::PUBLIC,
                action: AuditAction::OauthExpire,
                subject: &row.client_id,
                detail: json!({"what": "consent"}),
            },
        )
        .await?;
        tx.commit()
            .await
            .map_err(|e| Error::storage("committing an expired request", e))?;
        return Err(consent_invalid("this authorization request expired"));
    }
    Ok((tx, row))
}

/// Approves a pending request as the pasted key's actor: the grant will act
/// as that key, narrowed to the requested scopes its roles can use at all.
/// A wrong key leaves the request pending (the page asks again).
pub async fn approve(
    store: &Store,
    issuer: &Issuer,
    id: &str,
    form_csrf: &str,
    cookie_csrf: Option<&str>,
    key: &RawKey,
    client: std::net::IpAddr,
) -> Result<Answered> {
    pending(store, id, form_csrf, cookie_csrf).await?;
    let verified = keys::verify(store, key).await?;
    // A key kept to some networks approves only from them: a stolen one had
    // made a grant, in its own name, from anywhere (its tokens were refused
    // on use, but the grant and its audit entry stood).
    verified.restrictions.check_network(client)?;
    let from = &client.to_string();
    let standing = Standing {
        principal: Principal::Key(verified.id),
        roles: verified.roles,
        restrictions: verified.restrictions,
        expires_at: verified.expires_at,
    };
    let (tx, row) = take(store, id).await?;
    issue_code(tx, issuer, row, &standing, from, "key pasted").await
}

/// Issues the code for a request taken out in `tx`, acting as `who`.
async fn issue_code(
    mut tx: crate::store::Tx,
    issuer: &Issuer,
    row: RequestRow,
    who: &Standing,
    from: &str,
    how: &str,
) -> Result<Answered> {
    let requested = ScopeSet::parse(&row.scopes)?;
    let usable: Vec<_> = requested
        .scopes()
        .iter()
        .copied()
        .filter(|s| s.actions().iter().any(|a| allowed(&who.roles, *a)))
        .collect();
    if usable.is_empty() {
        let (what, instead) = match &who.principal {
            Principal::Key(_) => ("this key's", "use a key"),
            Principal::User(_) => ("this user's", "approve as a user or key"),
        };
        return Err(Error::new(
            Code::OAUTH_SCOPE_INSUFFICIENT,
            format!("{what} roles allow none of the scopes asked for ({requested})"),
        )
        .hint(format!(
            "{instead} whose roles allow what the application asks for"
        )));
    }
    let (key_id, user_email) = who.principal.columns();
    let scopes = ScopeSet::new(usable);
    let code = Secret::generate(CODE_PREFIX);
    let now = now_ms();
    let grant_id = super::new_grant_id();
    sql::insert_code(
        &mut tx,
        &CodeRow {
            hash: code.hash(),
            grant_id: grant_id.clone(),
            client_id: row.client_id.clone(),
            redirect_uri: row.redirect_uri.clone(),
            challenge: row.challenge.clone(),
            resource: row.resource.clone(),
            scopes: scopes.to_string(),
            key_id,
            user_email,
            created_from: Some(from.to_string()),
            created_at: now,
            expires_at: now + CODE_TTL_MS,
            used_at: None,
        },
    )
    .await?;
    let actor = who.principal.audit_actor().to_string();
    audit::append(
        &mut tx,
        AuditEntry {
            actor: &actor,
            action: AuditAction::OauthApprove,
            subject: &row.client_id,
            detail: json!({
                "grant_id": grant_id,
                "scopes": scopes.to_string(),
                "resource": row.resource,
                "redirect_uri": row.redirect_uri,
                "from": from,
                "how": how,
            }),
        },
    )
    .await?;
    tx.commit()
        .await
        .map_err(|e| Error::storage("committing an approval", e))?;
    let mut params = vec![("code", code.expose())];
    if let Some(s) = &row.state {
        params.push(("state", s));
    }
    Ok(Answered {
        redirect: redirect_with(&row.redirect_uri, &params, issuer),
    })
}

/// Letters and digits that cannot be mistaken for one another.
const PAIR_ALPHABET: &[u8] = b"ABCDEFGHJKLMNPQRSTUVWXYZ23456789";

/// A pairing code as typed: case and dashes do not matter.
fn normal_pair_code(code: &str) -> String {
    code.chars()
        .filter(|c| c.is_ascii_alphanumeric())
        .map(|c| c.to_ascii_uppercase())
        .collect()
}

/// Gives a pending request a pairing code for an admin to approve with
/// `gatehouse oauth approve CODE --key-id ID|--as EMAIL`; shown on the page
/// only.
pub async fn begin_pairing(
    store: &Store,
    id: &str,
    form_csrf: &str,
    cookie_csrf: Option<&str>,
) -> Result<String> {
    pending(store, id, form_csrf, cookie_csrf).await?;
    use rand::RngExt;
    let mut rng = rand::rand_core::UnwrapErr(rand::rngs::SysRng);
    let raw: String = (0..8)
        .map(|_| PAIR_ALPHABET[rng.random_range(0..PAIR_ALPHABET.len())] as char)
        .collect();
    let mut tx = store.begin_write().await?;
    if !sql::set_pairing(&mut tx, id, &super::hash(&raw)).await? {
        return Err(consent_invalid(
            "this authorization request is unknown or was answered",
        ));
    }
    tx.commit()
        .await
        .map_err(|e| Error::storage("committing a pairing code", e))?;
    Ok(format!("{}-{}", &raw[..4], &raw[4..]))
}

/// What a pairing code asks for, shown to the admin before the approval:
/// a code is only as trustworthy as whoever passed it on, and the client's
/// name and redirect URI say whose application would get the grant.
#[derive(Debug, Clone, serde::Serialize, ts_rs::TS)]
pub struct PairingRequest {
    pub client_id: String,
    pub client_name: String,
    pub redirect_uri: String,
    pub scopes: String,
}

fn no_pairing(code: &str) -> Error {
    Error::new(
        Code::OAUTH_CONSENT_INVALID,
        format!("no pending authorization has the pairing code {code}"),
    )
    .hint("check the code on the consent page; codes end when the page is answered or after ten minutes")
}

async fn client_name(store: &Store, client_id: &str) -> String {
    match client::find_for_token(store, client_id).await {
        Ok(c) => c.name,
        _ => client_id.to_string(),
    }
}

/// The pending request behind a pairing code, changing nothing; refused as
/// [`approve_pairing`] would be when `principal` cannot act.
pub async fn pairing_request(
    store: &Store,
    code: &str,
    principal: &Principal,
) -> Result<PairingRequest> {
    stand(store, principal).await?;
    // One already approved is refused by the approval: not shown either.
    let row = sql::find_by_pairing(store, &super::hash(&normal_pair_code(code)))
        .await?
        .filter(|r| r.expires_at > now_ms())
        .filter(|r| r.approved_key_id.is_none() && r.approved_email.is_none())
        .ok_or_else(|| no_pairing(code))?;
    Ok(PairingRequest {
        client_name: client_name(store, &row.client_id).await,
        client_id: row.client_id,
        redirect_uri: row.redirect_uri,
        scopes: row.scopes,
    })
}

/// What an admin approved, for the CLI and the desktop to say.
#[derive(Debug, Clone, serde::Serialize, ts_rs::TS)]
pub struct PairingApproved {
    pub client_id: String,
    pub client_name: String,
    pub redirect_uri: String,
    pub scopes: String,
    /// Whom the grant will act as.
    pub acts_as: Principal,
}

/// An admin (`actor`, the audit label of who decided) approves a pairing
/// code: the request will act as `principal`, which must stand now (a live
/// key; an existing, enabled user) and is checked again at every step after.
pub async fn approve_pairing(
    store: &Store,
    actor: &str,
    code: &str,
    principal: &Principal,
) -> Result<PairingApproved> {
    let who = stand(store, principal).await?.principal;
    let (key_id, email) = who.columns();
    let unknown = || no_pairing(code);
    let mut tx = store.begin_write().await?;
    let row = sql::request_by_pairing(&mut tx, &super::hash(&normal_pair_code(code)))
        .await?
        .ok_or_else(unknown)?;
    if row.expires_at <= now_ms() {
        audit::append(
            &mut tx,
            AuditEntry {
                actor,
                action: AuditAction::OauthExpire,
                subject: &row.client_id,
                detail: json!({"what": "consent", "pairing": true}),
            },
        )
        .await?;
        tx.commit()
            .await
            .map_err(|e| Error::storage("committing an expired request", e))?;
        return Err(unknown());
    }
    if !sql::approve_pairing(&mut tx, &row.id, key_id.as_deref(), email.as_deref()).await? {
        return Err(Error::new(
            Code::OAUTH_CONSENT_INVALID,
            format!("the pairing code {code} was already approved"),
        )
        .hint("nothing to do"));
    }
    audit::append(
        &mut tx,
        AuditEntry {
            actor,
            action: AuditAction::OauthPairApprove,
            subject: &row.client_id,
            detail: json!({
                "key_id": key_id,
                "as": who.audit_actor().to_string(),
                "scopes": row.scopes,
                "redirect_uri": row.redirect_uri,
            }),
        },
    )
    .await?;
    tx.commit()
        .await
        .map_err(|e| Error::storage("committing a pairing approval", e))?;
    let client_name = client_name(store, &row.client_id).await;
    Ok(PairingApproved {
        client_id: row.client_id,
        client_name,
        redirect_uri: row.redirect_uri,
        scopes: row.scopes,
        acts_as: who,
    })
}

/// The page's "continue" after pairing: the code for the client once an
/// admin approved, `None` while nobody has.
pub async fn finish_pairing(
    store: &Store,
    issuer: &Issuer,
    id: &str,
    form_csrf: &str,
    cookie_csrf: Option<&str>,
    from: &str,
) -> Result<Option<Answered>> {
    let row = pending(store, id, form_csrf, cookie_csrf).await?;
    if row.approved_key_id.is_none() && row.approved_email.is_none() {
        return Ok(None);
    }
    let principal = Principal::from_columns(row.approved_key_id, row.approved_email)?;
    let who = stand(store, &principal).await?;
    let (tx, row) = take(store, id).await?;
    issue_code(tx, issuer, row, &who, from, "pairing approved by an admin")
        .await
        .map(Some)
}

/// Denies a pending request; the client gets `access_denied`.
pub async fn deny(
    store: &Store,
    issuer: &Issuer,
    id: &str,
    form_csrf: &str,
    cookie_csrf: Option<&str>,
    from: &str,
) -> Result<Answered> {
    pending(store, id, form_csrf, cookie_csrf).await?;
    let (mut tx, row) = take(store, id).await?;
    audit::append(
        &mut tx,
        AuditEntry {
            actor: AuditActor::PUBLIC,
            action: AuditAction::OauthDeny,
            subject: &row.client_id,
            detail: json!({"from": from, "scopes": row.scopes}),
        },
    )
    .await?;
    tx.commit()
        .await
        .map_err(|e| Error::storage("committing a denial", e))?;
    Ok(Answered {
        redirect: error_redirect(
            &row.redirect_uri,
            row.state.as_deref(),
            "access_denied",
            "the person declined",
            issuer,
        ),
    })
}

/// A token request, as sent to `/token`.
#[derive(Debug, Default)]
pub struct TokenRequest {
    pub grant_type: Option<String>,
    pub code: Option<Secret>,
    pub redirect_uri: Option<String>,
    pub code_verifier: Option<String>,
    pub refresh_token: Option<Secret>,
    pub resource: Option<String>,
    pub client_id: Option<String>,
    pub client_secret: Option<Secret>,
    /// Whether the client's credentials came in `Authorization: Basic`.
    pub basic: bool,
}

/// What `/token` answers.
#[derive(Debug)]
pub struct Tokens {
    pub access_token: Secret,
    pub refresh_token: Secret,
    pub expires_in: i64,
    pub scope: ScopeSet,
}

impl Tokens {
    pub fn body(&self) -> serde_json::Value {
        json!({
            "access_token": self.access_token.expose(),
            "token_type": "Bearer",
            "expires_in": self.expires_in / 1000,
            "refresh_token": self.refresh_token.expose(),
            "scope": self.scope.to_string(),
        })
    }
}

fn invalid_grant(message: &str) -> Error {
    oauth_error(
        Code::OAUTH_GRANT_INVALID,
        "invalid_grant",
        message.to_string(),
    )
    .hint("start the authorization again")
}

fn invalid_request(message: &str) -> Error {
    oauth_error(
        Code::OAUTH_REQUEST_INVALID,
        "invalid_request",
        message.to_string(),
    )
}

/// The authenticated client of a token request.
async fn token_client(store: &Store, req: &TokenRequest) -> Result<Client> {
    let id = req
        .client_id
        .as_deref()
        .ok_or_else(|| invalid_request("client_id is missing"))?;
    let client = client::find_for_token(store, id).await?;
    client::authenticate(&client, req.client_secret.as_ref(), req.basic)?;
    Ok(client)
}

/// `/token`: exchanges a code or rotates a refresh token.
pub async fn token(
    store: &Store,
    issuer: &Issuer,
    req: &TokenRequest,
    from: &str,
) -> Result<Tokens> {
    match req.grant_type.as_deref() {
        Some("authorization_code") => exchange(store, issuer, req, from).await,
        Some("refresh_token") => refresh(store, issuer, req).await,
        Some(other) => Err(oauth_error(
            Code::OAUTH_REQUEST_INVALID,
            "unsupported_grant_type",
            format!("grant_type {other:?} is not supported"),
        )),
        None => Err(invalid_request("grant_type is missing")),
    }
}

async fn issue(tx: &mut crate::store::Tx, grant_id: &str, now: i64) -> Result<(Secret, Secret)> {
    // Rows past their expiry prove nothing any more (a spent refresh token
    // is kept until then, for reuse detection).
    sql::delete_expired_tokens(tx, grant_id, now).await?;
    let access = Secret::generate(ACCESS_PREFIX);
    let refresh = Secret::generate(REFRESH_PREFIX);
    sql::insert_token(
        tx,
        &access.hash(),
        grant_id,
        "access",
        now,
        now + ACCESS_TTL_MS,
    )
    .await?;
    sql::insert_token(
        tx,
        &refresh.hash(),
        grant_id,
        "refresh",
        now,
        now + REFRESH_TTL_MS,
    )
    .await?;
    Ok((access, refresh))
}

/// Revokes a grant in `tx` because a spent code or refresh token came back.
async fn revoke_replayed(mut tx: crate::store::Tx, grant_id: &str, what: &str) -> Result<()> {
    let now = now_ms();
    let revoked = sql::revoke_grant(&mut tx, grant_id, now, &format!("{what} reused")).await?;
    audit::append(
        &mut tx,
        AuditEntry {
            actor: AuditActor::PUBLIC,
            action: AuditAction::OauthReuse,
            subject: grant_id,
            detail: json!({"what": what, "revoked": revoked}),
        },
    )
    .await?;
    crate::store::access::bump(&mut tx).await?;
    tx.commit()
        .await
        .map_err(|e| Error::storage("committing a revocation", e))
}

/// Records that a client presented an expired code or refresh token (`tx`
/// has marked it used, so it is spent for good).
async fn expired(
    mut tx: crate::store::Tx,
    client_id: &str,
    what: &str,
    grant_id: &str,
) -> Result<()> {
    audit::append(
        &mut tx,
        AuditEntry {
            actor: AuditActor::PUBLIC,
            action: AuditAction::OauthExpire,
            subject: client_id,
            detail: json!({"what": what, "grant_id": grant_id}),
        },
    )
    .await?;
    tx.commit()
        .await
        .map_err(|e| Error::storage("committing an expiry", e))
}

/// The authorization code exchange; see the module doc.
pub async fn exchange(
    store: &Store,
    issuer: &Issuer,
    req: &TokenRequest,
    from: &str,
) -> Result<Tokens> {
    let code = req
        .code
        .as_ref()
        .ok_or_else(|| invalid_request("code is missing"))?;
    let verifier = req
        .code_verifier
        .as_deref()
        .ok_or_else(|| invalid_request("code_verifier is missing (PKCE is required)"))?;
    let resource = req.resource.as_deref().ok_or_else(|| {
        oauth_error(
            Code::OAUTH_REQUEST_INVALID,
            "invalid_target",
            "resource is required",
        )
    })?;
    let client = token_client(store, req).await?;
    let now = now_ms();
    let mut tx = store.begin_write().await?;
    let row = sql::get_code(&mut tx, &code.hash())
        .await?
        .ok_or_else(|| invalid_grant("the authorization code is unknown"))?;
    if row.client_id != client.id {
        return Err(invalid_grant(
            "the authorization code was issued to another client",
        ));
    }
    if !sql::use_code(&mut tx, &row.hash, now).await? {
        revoke_replayed(tx, &row.grant_id, "authorization code").await?;
        return Err(invalid_grant(
            "the authorization code was already used; the grant it made is revoked",
        ));
    }
    if row.expires_at <= now {
        expired(tx, &row.client_id, "authorization code", &row.grant_id).await?;
        return Err(invalid_grant("the authorization code expired"));
    }
    if req.redirect_uri.as_deref() != Some(row.redirect_uri.as_str()) {
        return Err(invalid_grant(
            "redirect_uri differs from the authorization request's",
        ));
    }
    if !issuer.is_resource(resource) || resource.trim_end_matches('/') != row.resource {
        return Err(oauth_error(
            Code::OAUTH_REQUEST_INVALID,
            "invalid_target",
            "resource differs from the authorization request's",
        ));
    }
    if !pkce_shape(verifier) || s256(verifier) != row.challenge {
        return Err(invalid_grant(
            "the code_verifier does not match the code_challenge",
        ));
    }
    // The principal must still stand (key revoked, user disabled between
    // consent and exchange?).
    let principal = Principal::from_columns(row.key_id.clone(), row.user_email.clone())?;
    still_stands(store, &principal).await?;
    sql::insert_grant(
        &mut tx,
        &GrantRow {
            id: row.grant_id.clone(),
            client_id: row.client_id.clone(),
            key_id: row.key_id.clone(),
            user_email: row.user_email.clone(),
            scopes: row.scopes.clone(),
            resource: row.resource.clone(),
            redirect_uri: row.redirect_uri.clone(),
            created_at: now,
            created_from: row.created_from.clone().or(Some(from.to_string())),
            last_used_at: None,
            revoked_at: None,
            revoked_reason: None,
        },
    )
    .await?;
    sql::touch_client(&mut tx, &client.id, now).await?;
    let (access, refresh) = issue(&mut tx, &row.grant_id, now).await?;
    let actor = principal.audit_actor().to_string();
    audit::append(
        &mut tx,
        AuditEntry {
            actor: &actor,
            action: AuditAction::OauthGrant,
            subject: &row.grant_id,
            detail: json!({"client_id": client.id, "client_name": client.name, "scopes": row.scopes}),
        },
    )
    .await?;
    tx.commit()
        .await
        .map_err(|e| Error::storage("committing a grant", e))?;
    Ok(Tokens {
        access_token: access,
        refresh_token: refresh,
        expires_in: ACCESS_TTL_MS,
        scope: ScopeSet::parse(&row.scopes)?,
    })
}

/// Refresh token rotation; see the module doc.
pub async fn refresh(store: &Store, issuer: &Issuer, req: &TokenRequest) -> Result<Tokens> {
    let presented = req
        .refresh_token
        .as_ref()
        .ok_or_else(|| invalid_request("refresh_token is missing"))?;
    let client = token_client(store, req).await?;
    let now = now_ms();
    let mut tx = store.begin_write().await?;
    let hash = presented.hash();
    let row = sql::find_token_in(&mut tx, &hash)
        .await?
        .filter(|r| r.kind == "refresh")
        .ok_or_else(|| invalid_grant("the refresh token is unknown or revoked"))?;
    if row.client_id != client.id {
        return Err(invalid_grant(
            "the refresh token was issued to another client",
        ));
    }
    // Another `--public-url` on the same database is another resource: it
    // neither spends nor rotates this one's tokens.
    if !issuer.is_resource(&row.resource) {
        return Err(invalid_grant(
            "the refresh token was issued for another resource",
        ));
    }
    if row.revoked_at.is_some() {
        return Err(invalid_grant("the grant was revoked"));
    }
    let replayed = "the refresh token was already used; the whole grant is revoked";
    if row.used_at.is_some() {
        revoke_replayed(tx, &row.grant_id, "refresh token").await?;
        return Err(invalid_grant(replayed));
    }
    // An expired token is refused before it is spent: presenting it again
    // is no replay.
    if row.expires_at <= now {
        expired(tx, &row.client_id, "refresh token", &row.grant_id).await?;
        return Err(invalid_grant("the refresh token expired"));
    }
    if !sql::use_token(&mut tx, &hash, now).await? {
        revoke_replayed(tx, &row.grant_id, "refresh token").await?;
        return Err(invalid_grant(replayed));
    }
    if let Some(r) = &req.resource
        && !issuer.is_resource(r)
    {
        return Err(oauth_error(
            Code::OAUTH_REQUEST_INVALID,
            "invalid_target",
            "resource differs from the grant's",
        ));
    }
    still_stands(
        store,
        &Principal::from_columns(row.key_id.clone(), row.user_email.clone())?,
    )
    .await?;
    let (access, refresh) = issue(&mut tx, &row.grant_id, now).await?;
    tx.commit()
        .await
        .map_err(|e| Error::storage("committing a token refresh", e))?;
    Ok(Tokens {
        access_token: access,
        refresh_token: refresh,
        expires_in: ACCESS_TTL_MS,
        scope: ScopeSet::parse(&row.scopes)?,
    })
}

/// [`stand`] at the token endpoint: a principal that can no longer act (a
/// key revoked or expired, a user disabled or removed) makes the code or
/// refresh token `invalid_grant` (RFC 6749, 5.2), so the client asks for a
/// new authorization instead of retrying a `server_error`; the key or user
/// is not named to the client.
async fn still_stands(store: &Store, principal: &Principal) -> Result<Standing> {
    stand(store, principal).await.map_err(|e| {
        if matches!(
            e.code,
            Code::ACTOR_API_KEY_INVALID | Code::USER_DISABLED | Code::ACTOR_EMAIL_UNKNOWN
        ) {
            tracing::info!(code = %e.code, message = %e.message, "a grant's principal no longer stands");
            invalid_grant("the key or user this grant acts as can no longer act (revoked, expired or disabled)")
        } else {
            e
        }
    })
}

/// An access token's actor, as [`check_access`] found it.
#[derive(Debug, Clone)]
pub struct TokenActor {
    /// The principal's actor with the grant's scopes (and id) in its
    /// restrictions.
    pub actor: Actor,
    pub grant_id: String,
    pub scopes: ScopeSet,
    /// When the principal (a key) stops working, if ever.
    pub key_expires_at: Option<i64>,
    /// When this access token stops working.
    pub token_expires_at: i64,
}

fn token_invalid(message: &str) -> Error {
    oauth_error(
        Code::OAUTH_TOKEN_INVALID,
        "invalid_token",
        message.to_string(),
    )
    .hint("get a new token: refresh it, or authorize the client again")
}

/// The refusal of an access token past its expiry.
pub fn token_expired() -> Error {
    token_invalid("the access token expired")
}

/// Refuses when a grant was revoked (or is gone): what a long-running
/// request re-checks when the access generation moves.
pub async fn check_grant(store: &Store, grant_id: &str) -> Result<()> {
    match sql::grant_revoked_at(store, grant_id).await? {
        Some(None) => Ok(()),
        _ => Err(token_invalid("the grant was revoked")),
    }
}

/// Whether a bearer credential is one of ours rather than an API key.
pub fn is_token(text: &str) -> bool {
    text.starts_with(ACCESS_PREFIX) || text.starts_with(REFRESH_PREFIX)
}

/// Checks an access token for this resource; see the module doc.
pub async fn check_access(store: &Store, issuer: &Issuer, token: &Secret) -> Result<TokenActor> {
    if !token.expose().starts_with(ACCESS_PREFIX) {
        return Err(token_invalid("this is not an access token"));
    }
    let row = sql::find_token(store, &token.hash())
        .await?
        .filter(|r| r.kind == "access")
        .ok_or_else(|| token_invalid("the access token is unknown or revoked"))?;
    let now = now_ms();
    if row.revoked_at.is_some() {
        return Err(token_invalid("the grant was revoked"));
    }
    if row.expires_at <= now {
        return Err(token_expired());
    }
    if !issuer.is_resource(&row.resource) {
        return Err(token_invalid(
            "the access token was issued for another resource",
        ));
    }
    let principal = Principal::from_columns(row.key_id, row.user_email)?;
    let who = stand(store, &principal).await.map_err(|e| {
        // A user who stands no more answers like a revoked key: 401.
        if matches!(e.code, Code::USER_DISABLED | Code::ACTOR_EMAIL_UNKNOWN) {
            token_invalid(&format!(
                "the grant acts as a user who cannot act now: {}",
                e.message
            ))
        } else {
            e
        }
    })?;
    let scopes = ScopeSet::parse(&row.scopes)?;
    if let Err(e) = sql::touch_grant(store, &row.grant_id, now).await {
        tracing::warn!(code = %e.code, "could not record OAuth grant use");
    }
    let key_expires_at = who.expires_at;
    Ok(TokenActor {
        actor: who.actor(&row.grant_id, &scopes),
        grant_id: row.grant_id,
        scopes,
        key_expires_at,
        token_expires_at: row.expires_at,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn issuer_comes_from_the_public_url_and_names_one_resource() {
        let i = Issuer::new("https://mcp.example.com/").unwrap();
        assert_eq!(i.issuer, "https://mcp.example.com");
        assert_eq!(i.resource, "https://mcp.example.com/mcp");
        assert!(i.is_resource("https://mcp.example.com/mcp/"));
        assert!(!i.is_resource("https://other.example/mcp"));
        assert!(Issuer::new("http://mcp.example.com").is_err());
        assert!(Issuer::new("http://127.0.0.1:8808").is_ok());
        assert!(Issuer::new("https://example.com/gatehouse").is_err());
    }

    #[test]
    fn s256_matches_the_rfc_7636_example() {
        assert_eq!(
            s256("dBjftJeZ4CVP-mB92K27uhbUJU1p1r_wW1gFWFOEjXk"),
            "E9Melhoa2OwvFrEMTJguCHaoeK1t8URWbuGJSstw-cM"
        );
    }
}

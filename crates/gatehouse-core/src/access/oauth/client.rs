//! OAuth clients: dynamic registration (RFC 7591) and client ID metadata
//! documents (a client whose id is an HTTPS URL serving its metadata).
//!
//! Redirect URIs are HTTPS, or HTTP to a loopback address (a native client's
//! local callback); never a fragment, never credentials. Authorization then
//! matches them exactly. Fetching a document is the HTTP adapter's business
//! (through the `http_fetch` SSRF guard); [`parse_document`] decides whether
//! what came back describes the URL it came from.

use serde_json::{Value, json};
use url::Url;

use super::{CLIENT_SECRET_PREFIX, REGISTRATION_TTL_MS, Secret, oauth_error};
use crate::error::{Code, Error, Result};
use crate::store::Store;
use crate::store::oauth::{self as sql, ClientRow};
use crate::time::now_ms;

/// How long a fetched metadata document is trusted before it is fetched again.
pub const DOCUMENT_TTL_MS: i64 = 3_600_000;
/// The largest metadata document read.
pub const MAX_DOCUMENT_BYTES: usize = 16 * 1024;
/// Redirect URIs a client may list.
const MAX_REDIRECTS: usize = 10;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum AuthMethod {
    None,
    ClientSecretBasic,
    ClientSecretPost,
}

impl AuthMethod {
    pub fn as_str(self) -> &'static str {
        match self {
            AuthMethod::None => "none",
            AuthMethod::ClientSecretBasic => "client_secret_basic",
            AuthMethod::ClientSecretPost => "client_secret_post",
        }
    }

    pub fn parse(s: &str) -> Option<AuthMethod> {
        match s {
            "none" => Some(AuthMethod::None),
            "client_secret_basic" => Some(AuthMethod::ClientSecretBasic),
            "client_secret_post" => Some(AuthMethod::ClientSecretPost),
            _ => None,
        }
    }
}

/// A client as authorization sees it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Client {
    pub id: String,
    /// `registered` or `document`.
    pub kind: String,
    pub name: String,
    pub redirect_uris: Vec<String>,
    pub auth_method: AuthMethod,
    pub secret_hash: Option<String>,
}

impl Client {
    fn from_row(row: ClientRow) -> Result<Client> {
        let redirect_uris: Vec<String> = serde_json::from_str(&row.redirect_uris)
            .map_err(|e| Error::storage("reading an OAuth client's redirect URIs", e))?;
        let auth_method = AuthMethod::parse(&row.auth_method).ok_or_else(|| {
            Error::storage("reading an OAuth client's auth method", &row.auth_method)
        })?;
        Ok(Client {
            id: row.id,
            kind: row.kind,
            name: row.name,
            redirect_uris,
            auth_method,
            secret_hash: row.secret_hash,
        })
    }

    /// The host every redirect URI goes to, for the consent page.
    pub fn redirect_hosts(&self) -> Vec<String> {
        let mut hosts: Vec<String> = self
            .redirect_uris
            .iter()
            .filter_map(|u| Url::parse(u).ok())
            .filter_map(|u| u.host_str().map(str::to_string))
            .collect();
        hosts.sort();
        hosts.dedup();
        hosts
    }
}

fn invalid_metadata(message: impl Into<String>) -> Error {
    oauth_error(
        Code::OAUTH_CLIENT_INVALID,
        "invalid_client_metadata",
        message,
    )
}

fn invalid_redirect(message: impl Into<String>) -> Error {
    oauth_error(Code::OAUTH_REDIRECT_INVALID, "invalid_redirect_uri", message).hint(
        "redirect URIs must be https://…, or http:// to 127.0.0.1, [::1] or localhost, without a fragment",
    )
}

/// Whether `host` is a loopback name or address.
pub fn is_loopback_host(host: &url::Host<&str>) -> bool {
    match host {
        url::Host::Domain(d) => d.eq_ignore_ascii_case("localhost"),
        url::Host::Ipv4(ip) => ip.is_loopback(),
        url::Host::Ipv6(ip) => ip.is_loopback(),
    }
}

/// Refuses a redirect URI a client may not register.
pub fn check_redirect_uri(text: &str) -> Result<()> {
    let url = Url::parse(text).map_err(|_| invalid_redirect(format!("{text:?} is not a URL")))?;
    if url.fragment().is_some() {
        return Err(invalid_redirect(format!("{text:?} has a fragment")));
    }
    if !url.username().is_empty() || url.password().is_some() {
        return Err(invalid_redirect(format!("{text:?} carries credentials")));
    }
    let Some(host) = url.host() else {
        return Err(invalid_redirect(format!("{text:?} has no host")));
    };
    match url.scheme() {
        "https" => Ok(()),
        "http" if is_loopback_host(&host) => Ok(()),
        _ => Err(invalid_redirect(format!(
            "{text:?} is neither HTTPS nor a loopback callback"
        ))),
    }
}

fn redirect_list(value: Option<&Value>) -> Result<Vec<String>> {
    let list = value
        .and_then(Value::as_array)
        .ok_or_else(|| invalid_redirect("redirect_uris must be a non-empty list"))?;
    if list.is_empty() || list.len() > MAX_REDIRECTS {
        return Err(invalid_redirect(format!(
            "redirect_uris must list 1 to {MAX_REDIRECTS} URIs"
        )));
    }
    let mut out = Vec::new();
    for v in list {
        let s = v
            .as_str()
            .ok_or_else(|| invalid_redirect("redirect_uris must be strings"))?;
        check_redirect_uri(s)?;
        out.push(s.to_string());
    }
    Ok(out)
}

fn client_name(value: Option<&Value>, fallback: &str) -> String {
    let name = value.and_then(Value::as_str).unwrap_or(fallback);
    // Shown on the consent page: no control, bidirectional or invisible
    // characters.
    let name: String = name
        .chars()
        .filter(|c| {
            !c.is_control() && !crate::text::is_bidi_control(*c) && !crate::text::is_invisible(*c)
        })
        .take(100)
        .collect();
    if name.trim().is_empty() {
        fallback.to_string()
    } else {
        name
    }
}

/// A dynamic registration's answer; `client_secret` only for a confidential
/// client, shown in this answer and never again.
#[derive(Debug)]
pub struct Registered {
    pub client_id: String,
    pub client_secret: Option<Secret>,
    pub body: Value,
}

/// Registers a client from an RFC 7591 request body. `from` is the address
/// it came from (kept for the admin). At most
/// [`super::MAX_UNUSED_REGISTRATIONS`] wait unused: the oldest make room (the
/// per-network rate is the HTTP adapter's).
pub async fn register(store: &Store, body: &Value, from: &str) -> Result<Registered> {
    if !body.is_object() {
        return Err(invalid_metadata("the registration must be a JSON object"));
    }
    let redirect_uris = redirect_list(body.get("redirect_uris"))?;
    let method = match body.get("token_endpoint_auth_method") {
        None => AuthMethod::ClientSecretBasic,
        Some(v) => v.as_str().and_then(AuthMethod::parse).ok_or_else(|| {
            invalid_metadata(
                "token_endpoint_auth_method must be none, client_secret_basic or client_secret_post",
            )
        })?,
    };
    // RFC 7591 makes both arrays; a bare string is refused, not read as one.
    if let Some(types) = body.get("grant_types")
        && !types.as_array().is_some_and(|types| {
            types
                .iter()
                .all(|t| matches!(t.as_str(), Some("authorization_code" | "refresh_token")))
        })
    {
        return Err(invalid_metadata(
            "grant_types must be an array holding only authorization_code and refresh_token",
        ));
    }
    if let Some(types) = body.get("response_types")
        && !types
            .as_array()
            .is_some_and(|types| types.iter().all(|t| t.as_str() == Some("code")))
    {
        return Err(invalid_metadata(
            "response_types must be an array holding only code",
        ));
    }
    let now = now_ms();
    let id = format!("gh_{}", super::random_id());
    let secret = (method != AuthMethod::None).then(|| Secret::generate(CLIENT_SECRET_PREFIX));
    let name = client_name(body.get("client_name"), "unnamed client");
    let row = ClientRow {
        id: id.clone(),
        kind: "registered".into(),
        name: name.clone(),
        redirect_uris: serde_json::to_string(&redirect_uris).expect("strings serialise"),
        auth_method: method.as_str().into(),
        secret_hash: secret.as_ref().map(Secret::hash),
        created_at: now,
        expires_at: Some(now + REGISTRATION_TTL_MS),
        last_used_at: None,
        registered_from: Some(from.to_string()),
    };
    let mut tx = store.begin_write().await?;
    sql::delete_lapsed_unused(&mut tx, "registered", now).await?;
    // At the bound, the oldest registrations nobody has used make room: a
    // flood from many addresses then pushes out its own entries, where a
    // refusal would lock every new client out until they lapsed.
    let over =
        sql::count_unused(&mut tx, "registered", now).await? + 1 - super::MAX_UNUSED_REGISTRATIONS;
    if over > 0 {
        let gone = sql::delete_oldest_unused(&mut tx, "registered", over).await?;
        tracing::warn!(
            gone,
            "unused OAuth registrations at their bound; the oldest made room"
        );
    }
    sql::insert_client(&mut tx, &row).await?;
    tx.commit()
        .await
        .map_err(|e| Error::storage("committing an OAuth registration", e))?;
    let mut answer = json!({
        "client_id": id,
        "client_id_issued_at": now / 1000,
        "client_name": name,
        "redirect_uris": redirect_uris,
        "grant_types": ["authorization_code", "refresh_token"],
        "response_types": ["code"],
        "token_endpoint_auth_method": method.as_str(),
    });
    if let Some(s) = &secret {
        answer["client_secret"] = json!(s.expose());
        answer["client_secret_expires_at"] = json!(0);
    }
    Ok(Registered {
        client_id: id,
        client_secret: secret,
        body: answer,
    })
}

/// Whether a client id names a metadata document: an HTTPS URL with a path
/// (or HTTP to a loopback address, which the fetch guard refuses unless the
/// server allows that host: an intranet client or a test's fixture).
pub fn is_document_id(id: &str) -> bool {
    document_url(id).is_ok()
}

/// The document URL a client id names, or why it cannot be one.
pub fn document_url(id: &str) -> Result<Url> {
    let bad = |why: &str| {
        oauth_error(
            Code::OAUTH_CLIENT_INVALID,
            "invalid_client",
            format!("the client id {id:?} is not a usable metadata document URL: {why}"),
        )
    };
    let url = Url::parse(id).map_err(|_| bad("not a URL"))?;
    let loopback = url.host().is_some_and(|h| is_loopback_host(&h));
    if url.scheme() != "https" && !(url.scheme() == "http" && loopback) {
        return Err(bad("not https"));
    }
    if url.fragment().is_some() || !url.username().is_empty() || url.password().is_some() {
        return Err(bad("it has a fragment or credentials"));
    }
    if url.path() == "/" || url.path().is_empty() {
        return Err(bad("it has no path"));
    }
    // The parsed form must be the text as sent: no dot segments or other
    // normalisation that could make two ids one document.
    if url.as_str() != id {
        return Err(bad("it is not in normal form"));
    }
    Ok(url)
}

/// Reads a fetched metadata document for the client id `url`: its
/// `client_id` must be the URL exactly, its redirect URIs valid, and it may
/// not claim a secret (a document is public; such clients use `none`).
pub fn parse_document(url: &str, body: &[u8]) -> Result<Client> {
    if body.len() > MAX_DOCUMENT_BYTES {
        return Err(invalid_metadata(format!(
            "the client metadata document is over {MAX_DOCUMENT_BYTES} bytes"
        )));
    }
    let doc: Value = serde_json::from_slice(body)
        .map_err(|_| invalid_metadata("the client metadata document is not JSON"))?;
    let claimed = doc.get("client_id").and_then(Value::as_str);
    if claimed != Some(url) {
        return Err(oauth_error(
            Code::OAUTH_CLIENT_INVALID,
            "invalid_client",
            format!(
                "the metadata document at {url} names client_id {:?}, not its own URL",
                claimed.unwrap_or("")
            ),
        )
        .hint("a client metadata document must name its own URL as client_id"));
    }
    if doc.get("client_secret").is_some() {
        return Err(invalid_metadata(
            "a client metadata document may not carry a client_secret",
        ));
    }
    match doc
        .get("token_endpoint_auth_method")
        .and_then(Value::as_str)
    {
        None | Some("none") => {}
        Some(other) => {
            return Err(invalid_metadata(format!(
                "token_endpoint_auth_method {other:?} is not supported for metadata documents; use none"
            )));
        }
    }
    let redirect_uris = redirect_list(doc.get("redirect_uris"))?;
    let host = Url::parse(url)
        .ok()
        .and_then(|u| u.host_str().map(str::to_string))
        .unwrap_or_default();
    Ok(Client {
        id: url.to_string(),
        kind: "document".into(),
        name: client_name(doc.get("client_name"), &host),
        redirect_uris,
        auth_method: AuthMethod::None,
        secret_hash: None,
    })
}

/// Caches a document's client for [`DOCUMENT_TTL_MS`].
pub async fn cache_document(store: &Store, client: &Client) -> Result<()> {
    let now = now_ms();
    let row = ClientRow {
        id: client.id.clone(),
        kind: "document".into(),
        name: client.name.clone(),
        redirect_uris: serde_json::to_string(&client.redirect_uris).expect("strings serialise"),
        auth_method: client.auth_method.as_str().into(),
        secret_hash: None,
        created_at: now,
        expires_at: Some(now + DOCUMENT_TTL_MS),
        last_used_at: None,
        registered_from: None,
    };
    let mut tx = store.begin_write().await?;
    // Documents that lapsed with no grant ever made go as new ones come, so
    // requests naming ever new document URLs cannot grow the table for good.
    sql::delete_lapsed_unused(&mut tx, "document", now).await?;
    // And at the bound, as registrations: documents at ever new URLs of a
    // host that serves them (each fetched once) had grown it for an hour.
    let over = sql::count_unused(&mut tx, "document", now).await? + 1 - super::MAX_UNUSED_DOCUMENTS;
    if over > 0 {
        let gone = sql::delete_oldest_unused(&mut tx, "document", over).await?;
        tracing::warn!(
            gone,
            "unused client metadata documents at their bound; the oldest made room"
        );
    }
    sql::upsert_document_client(&mut tx, &row).await?;
    tx.commit()
        .await
        .map_err(|e| Error::storage("caching a client metadata document", e))
}

/// What the store knows of a client id.
pub enum Known {
    Client(Client),
    /// A metadata document that must be fetched (never seen, or stale).
    FetchDocument(Url),
}

/// Looks a client up: a live registration, a fresh cached document, or the
/// document to fetch; unknown and lapsed ids are refused.
pub async fn find(store: &Store, id: &str) -> Result<Known> {
    let now = now_ms();
    let row = sql::get_client(store, id).await?;
    match row {
        Some(r) if r.kind == "document" => {
            if r.expires_at.is_some_and(|e| e > now) {
                Ok(Known::Client(Client::from_row(r)?))
            } else {
                Ok(Known::FetchDocument(document_url(id)?))
            }
        }
        Some(r) if r.expires_at.is_none_or(|e| e > now) => Ok(Known::Client(Client::from_row(r)?)),
        _ if is_document_id(id) => Ok(Known::FetchDocument(document_url(id)?)),
        _ => Err(unknown_client(id)),
    }
}

/// The client of a token request: as [`find`], except that a document
/// client's cached row serves however old it is. The document decides
/// redirect URIs at `/authorize`; a code or refresh token is bound to the
/// client id and redirect it was made for, so nothing at `/token` needs the
/// document again (refreshing had failed once the hour-long cache lapsed,
/// which is as long as an access token lives). A document never cached
/// (no `/authorize` with it) is unknown here. The consent page's request
/// and a pairing's client name read it so too: a request outlives no cache
/// it began with.
pub async fn find_for_token(store: &Store, id: &str) -> Result<Client> {
    match sql::get_client(store, id).await? {
        Some(r) if r.kind == "document" || r.expires_at.is_none_or(|e| e > now_ms()) => {
            Client::from_row(r)
        }
        _ => Err(unknown_client(id)),
    }
}

pub fn unknown_client(id: &str) -> Error {
    oauth_error(
        Code::OAUTH_CLIENT_INVALID,
        "invalid_client",
        format!("no OAuth client {id:?} is registered here"),
    )
    .hint("register the client again (dynamic registration), or use a client ID metadata document URL")
}

/// Checks the client's credentials at the token endpoint. `secret` is what
/// it sent, `basic` whether it came in `Authorization: Basic`.
pub fn authenticate(client: &Client, secret: Option<&Secret>, basic: bool) -> Result<()> {
    let refuse = |why: &str| {
        oauth_error(
            Code::OAUTH_CLIENT_INVALID,
            "invalid_client",
            format!("client authentication failed: {why}"),
        )
    };
    match (client.auth_method, secret) {
        (AuthMethod::None, None) => Ok(()),
        (AuthMethod::None, Some(_)) => Err(refuse("a public client sent a secret")),
        (_, None) => Err(refuse("the client secret is missing")),
        (method, Some(s)) => {
            if (method == AuthMethod::ClientSecretBasic) != basic {
                return Err(refuse(&format!(
                    "this client authenticates with {}",
                    method.as_str()
                )));
            }
            match &client.secret_hash {
                Some(h) if *h == s.hash() => Ok(()),
                _ => Err(refuse("the client secret is wrong")),
            }
        }
    }
}

#[cfg(test)]
mod tests {
    /// A consent page names the client as a person reads it: invisible
    /// characters (a zero-width space inside "Claude by Anthropic") are
    /// dropped with the control and bidirectional ones.
    #[test]
    fn client_names_lose_invisible_and_control_characters() {
        let name = json!("Claude\u{200B} by\u{2060} Anthropic\u{FEFF}\u{202E}\u{7}");
        assert_eq!(client_name(Some(&name), "host"), "Claude by Anthropic");
        assert_eq!(
            client_name(Some(&json!("\u{200B}\u{200D}")), "host"),
            "host"
        );
    }

    use super::*;

    #[test]
    fn redirect_uris_must_be_https_or_loopback() {
        for ok in [
            "https://claude.ai/api/mcp/auth_callback",
            "http://127.0.0.1:33418/callback",
            "http://localhost:8080/cb",
            "http://[::1]:9/cb",
        ] {
            check_redirect_uri(ok).unwrap();
        }
        for bad in [
            "http://example.com/cb",
            "https://example.com/cb#frag",
            "https://user:pw@example.com/cb",
            "javascript:alert(1)",
            "not a url",
            "http://127.0.0.1.evil.example/cb",
        ] {
            let e = check_redirect_uri(bad).unwrap_err();
            assert_eq!(e.code, Code::OAUTH_REDIRECT_INVALID, "{bad}");
        }
    }

    #[test]
    fn metadata_document_whose_client_id_differs_from_its_url_is_refused() {
        let url = "https://app.example/oauth/client.json";
        let doc = json!({"client_id": "https://other.example/client.json", "client_name": "x",
            "redirect_uris": ["https://app.example/cb"]});
        let e = parse_document(url, doc.to_string().as_bytes()).unwrap_err();
        assert_eq!(e.code, Code::OAUTH_CLIENT_INVALID);
        let good = json!({"client_id": url, "client_name": "App",
            "redirect_uris": ["https://app.example/cb"]});
        let c = parse_document(url, good.to_string().as_bytes()).unwrap();
        assert_eq!(c.name, "App");
        assert_eq!(c.auth_method, AuthMethod::None);
    }

    #[test]
    fn oversized_metadata_document_is_refused() {
        let url = "https://app.example/c.json";
        let big = vec![b' '; MAX_DOCUMENT_BYTES + 1];
        assert_eq!(
            parse_document(url, &big).unwrap_err().code,
            Code::OAUTH_CLIENT_INVALID
        );
    }

    #[test]
    fn document_ids_are_https_urls_with_a_path_in_normal_form() {
        assert!(is_document_id("https://app.example/client.json"));
        assert!(!is_document_id("http://app.example/client.json"));
        assert!(!is_document_id("https://app.example/"));
        assert!(!is_document_id("https://app.example/a/../b"));
        assert!(!is_document_id("gh_abc"));
    }
}

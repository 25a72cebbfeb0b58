//! The OAuth routes of `gatehouse serve`, a thin adapter over
//! [`crate::access::oauth`]: discovery documents (RFC 9728 protected resource
//! metadata, RFC 8414 authorization server metadata and its OpenID-style
//! twin), `/register` (RFC 7591, rate limited per address), `/authorize` (the
//! consent page and its form) and `/token`.
//!
//! Served only when `--public-url` names the issuer (never a request's
//! `Host`); otherwise every one of these paths stays a plain 404, as clients
//! that find discovery documents switch to OAuth.
//!
//! The consent page is plain HTML: no script at all, a stylesheet from the
//! same origin, `frame-ancestors 'none'`, and a CSRF token that must come
//! back both in the form and in a `SameSite=Strict` cookie; a POST whose
//! `Origin` is not the issuer's is refused before anything is read.

use crate::text::escape_html as esc;
use std::net::IpAddr;
use std::time::Duration;

use base64::Engine;
use http_body_util::{BodyExt, Limited};
use hyper::header::{self, HeaderMap, HeaderValue};
use hyper::{Method, Request, Response, StatusCode};
use serde_json::{Value, json};

use super::endpoint::{Body, full, json_response, plain};
use super::rate::{Buckets, Rate, network};
use super::request_body::RequestBody;
use crate::access::keys::RawKey;
use crate::access::oauth::client::{self, Client, Known};
use crate::access::oauth::flow::{self, AuthorizeParams, Issuer, TokenRequest};
use crate::access::oauth::{Scope, ScopeSet, Secret, error_name};
use crate::error::{Code, Error};
use crate::mcp::server::http_fetch;
use crate::site::Site;

/// How long fetching a client metadata document may take.
const DOCUMENT_TIMEOUT: Duration = Duration::from_secs(5);
/// The largest form or registration body read.
const MAX_FORM_BYTES: usize = 64 * 1024;

/// OAuth's part of the server: who it is and its own rate buckets.
pub struct OAuth {
    pub issuer: Issuer,
    registrations: Buckets,
    authorizations: Buckets,
    pasted_keys: Buckets,
    secure: bool,
    /// Document hosts allowed at internal addresses (`--oauth-document-host`).
    document_hosts: Vec<String>,
}

impl OAuth {
    pub fn new(issuer: Issuer, document_hosts: Vec<String>) -> OAuth {
        let secure = issuer.issuer.starts_with("https://");
        OAuth {
            issuer,
            // Ten registrations, then one every six minutes, per network.
            registrations: Buckets::new(
                Rate {
                    per_second: 1.0 / 360.0,
                    burst: 10.0,
                },
                100_000,
            ),
            // Thirty authorization requests, then one every two seconds, per
            // network: each stores a request and may fetch a document.
            authorizations: Buckets::new(
                Rate {
                    per_second: 0.5,
                    burst: 30.0,
                },
                100_000,
            ),
            pasted_keys: Buckets::new(
                Rate {
                    per_second: 0.2,
                    burst: 10.0,
                },
                100_000,
            ),
            secure,
            document_hosts,
        }
    }

    /// The protected resource metadata URL a 401 points to.
    pub fn metadata_url(&self) -> String {
        format!(
            "{}/.well-known/oauth-protected-resource/mcp",
            self.issuer.issuer
        )
    }

    /// `WWW-Authenticate` for `/mcp`: `error` is `None` for a request
    /// without credentials.
    pub fn challenge(&self, error: Option<&str>, scope: &ScopeSet) -> HeaderValue {
        let mut v = String::from("Bearer ");
        if let Some(e) = error {
            v.push_str(&format!("error=\"{e}\", "));
        }
        v.push_str(&format!(
            "resource_metadata=\"{}\", scope=\"{scope}\"",
            self.metadata_url()
        ));
        HeaderValue::from_str(&v).expect("the challenge is visible ASCII")
    }

    fn origin(&self) -> &str {
        &self.issuer.issuer
    }

    /// Whether `path` is one of the OAuth routes.
    pub fn serves(path: &str) -> bool {
        matches!(
            path,
            "/.well-known/oauth-protected-resource"
                | "/.well-known/oauth-protected-resource/mcp"
                | "/.well-known/oauth-authorization-server"
                | "/.well-known/openid-configuration"
                | "/token"
                | "/register"
                | "/authorize"
                | "/oauth/consent.css"
        )
    }

    /// Serves an OAuth path, or `None` when the path is not one.
    pub async fn route(
        &self,
        site: &Site,
        req: Request<RequestBody>,
        client: IpAddr,
    ) -> Option<Response<Body>> {
        let path = req.uri().path().to_string();
        let method = req.method().clone();
        let cors = matches!(
            path.as_str(),
            "/.well-known/oauth-protected-resource"
                | "/.well-known/oauth-protected-resource/mcp"
                | "/.well-known/oauth-authorization-server"
                | "/.well-known/openid-configuration"
                | "/token"
                | "/register"
        );
        if !cors && !matches!(path.as_str(), "/authorize" | "/oauth/consent.css") {
            return None;
        }
        if cors && method == Method::OPTIONS {
            let mut r = plain(StatusCode::NO_CONTENT, "");
            with_cors(&mut r);
            return Some(r);
        }
        let mut r = match (method, path.as_str()) {
            (
                Method::GET,
                "/.well-known/oauth-protected-resource"
                | "/.well-known/oauth-protected-resource/mcp",
            ) => json_response(StatusCode::OK, &self.resource_metadata()),
            (
                Method::GET,
                "/.well-known/oauth-authorization-server" | "/.well-known/openid-configuration",
            ) => json_response(StatusCode::OK, &self.server_metadata()),
            (Method::POST, "/register") => self.register(site, req, client).await,
            (Method::POST, "/token") => self.token(site, req, client).await,
            (Method::GET, "/authorize") => {
                match self.authorizations.take(&network(client).to_string()) {
                    Ok(()) => self.authorize(site, req).await,
                    Err(wait) => {
                        let mut r = error_page(
                            StatusCode::TOO_MANY_REQUESTS,
                            "Too many authorization requests came from your network. Wait a little and start again.",
                        );
                        r.headers_mut().insert(
                            header::RETRY_AFTER,
                            HeaderValue::from(wait.as_secs().max(1)),
                        );
                        r
                    }
                }
            }
            (Method::POST, "/authorize") => self.consent(site, req, client).await,
            (Method::GET, "/oauth/consent.css") => {
                let mut r = plain(StatusCode::OK, CSS);
                r.headers_mut()
                    .insert(header::CONTENT_TYPE, HeaderValue::from_static("text/css"));
                r
            }
            _ => {
                let mut r = plain(StatusCode::METHOD_NOT_ALLOWED, "method not allowed\n");
                let allow = if path == "/authorize" {
                    "GET, POST"
                } else if path == "/token" || path == "/register" {
                    "POST"
                } else {
                    "GET"
                };
                r.headers_mut()
                    .insert(header::ALLOW, HeaderValue::from_static(allow));
                r
            }
        };
        if cors {
            with_cors(&mut r);
        }
        Some(r)
    }

    fn resource_metadata(&self) -> Value {
        json!({
            "resource": self.issuer.resource,
            "authorization_servers": [self.issuer.issuer],
            "scopes_supported": scope_names(),
            "bearer_methods_supported": ["header"],
            "resource_name": "Gatehouse",
        })
    }

    fn server_metadata(&self) -> Value {
        let i = &self.issuer.issuer;
        json!({
            "issuer": i,
            "authorization_endpoint": format!("{i}/authorize"),
            "token_endpoint": format!("{i}/token"),
            "registration_endpoint": format!("{i}/register"),
            "scopes_supported": scope_names(),
            "response_types_supported": ["code"],
            "response_modes_supported": ["query"],
            "grant_types_supported": ["authorization_code", "refresh_token"],
            "token_endpoint_auth_methods_supported": ["none", "client_secret_basic", "client_secret_post"],
            "code_challenge_methods_supported": ["S256"],
            "authorization_response_iss_parameter_supported": true,
            "client_id_metadata_document_supported": true,
        })
    }

    async fn register(
        &self,
        site: &Site,
        req: Request<RequestBody>,
        client: IpAddr,
    ) -> Response<Body> {
        if let Err(wait) = self.registrations.take(&network(client).to_string()) {
            let e = crate::access::oauth::oauth_error(
                Code::OAUTH_REGISTRATION_LIMITED,
                "temporarily_unavailable",
                "too many client registrations from this network",
            )
            .hint("try again after the time Retry-After gives");
            let mut r = oauth_error_response(StatusCode::TOO_MANY_REQUESTS, &e);
            r.headers_mut().insert(
                header::RETRY_AFTER,
                HeaderValue::from(wait.as_secs().max(1)),
            );
            return r;
        }
        let Some(bytes) = read_body(req.into_body()).await else {
            return oauth_json(
                StatusCode::BAD_REQUEST,
                "invalid_request",
                "the body could not be read or is too large",
            );
        };
        let Ok(body) = serde_json::from_slice::<Value>(&bytes) else {
            return oauth_json(
                StatusCode::BAD_REQUEST,
                "invalid_client_metadata",
                "the body is not JSON",
            );
        };
        match client::register(&site.store, &body, &client.to_string()).await {
            Ok(reg) => {
                tracing::info!(client_id = %reg.client_id, "registered an OAuth client");
                no_store(json_response(StatusCode::CREATED, &reg.body))
            }
            Err(e) => oauth_error_response(status_of(&e), &e),
        }
    }

    async fn token(
        &self,
        site: &Site,
        req: Request<RequestBody>,
        client: IpAddr,
    ) -> Response<Body> {
        let (parts, body) = req.into_parts();
        let Some(bytes) = read_body(body).await else {
            return oauth_json(
                StatusCode::BAD_REQUEST,
                "invalid_request",
                "the body could not be read or is too large",
            );
        };
        let form = Form::parse(&bytes);
        if let Some(name) = form.repeated() {
            return oauth_json(
                StatusCode::BAD_REQUEST,
                "invalid_request",
                &Form::repeated_message(name),
            );
        }
        let mut t = TokenRequest {
            grant_type: form.get("grant_type"),
            code: form.get("code").map(Secret::new),
            redirect_uri: form.get("redirect_uri"),
            code_verifier: form.get("code_verifier"),
            refresh_token: form.get("refresh_token").map(Secret::new),
            resource: form.get("resource"),
            client_id: form.get("client_id"),
            client_secret: form.get("client_secret").map(Secret::new),
            basic: false,
        };
        if let Some((id, secret)) = basic_credentials(&parts.headers) {
            if t.client_id.as_ref().is_some_and(|c| *c != id) || t.client_secret.is_some() {
                return oauth_json(
                    StatusCode::BAD_REQUEST,
                    "invalid_request",
                    "client credentials were sent twice",
                );
            }
            t.client_id = Some(id);
            t.client_secret = Some(secret);
            t.basic = true;
        }
        match flow::token(&site.store, &self.issuer, &t, &client.to_string()).await {
            Ok(tokens) => no_store(json_response(StatusCode::OK, &tokens.body())),
            Err(e) => {
                tracing::info!(code = %e.code, error = error_name(&e), "refused a token request");
                oauth_error_response(status_of(&e), &e)
            }
        }
    }

    /// Finds the client, fetching and caching its metadata document if it
    /// has one that is not cached.
    async fn find_client(&self, site: &Site, id: &str) -> Result<Client, Error> {
        match client::find(&site.store, id).await? {
            Known::Client(c) => Ok(c),
            Known::FetchDocument(url) => {
                let fetched = fetch_document(url.as_str(), &self.document_hosts).await?;
                let c = client::parse_document(url.as_str(), &fetched)?;
                client::cache_document(&site.store, &c).await?;
                Ok(c)
            }
        }
    }

    async fn authorize(&self, site: &Site, req: Request<RequestBody>) -> Response<Body> {
        let q = Form::parse(req.uri().query().unwrap_or("").as_bytes());
        if let Some(name) = q.repeated() {
            return error_page(StatusCode::BAD_REQUEST, &Form::repeated_message(name));
        }
        let p = AuthorizeParams {
            response_type: q.get("response_type"),
            client_id: q.get("client_id"),
            redirect_uri: q.get("redirect_uri"),
            code_challenge: q.get("code_challenge"),
            code_challenge_method: q.get("code_challenge_method"),
            state: q.get("state"),
            scope: q.get("scope"),
            resource: q.get("resource"),
        };
        let Some(client_id) = p.client_id.clone() else {
            return error_page(
                StatusCode::BAD_REQUEST,
                "The request names no client (client_id is missing).",
            );
        };
        let client = match self.find_client(site, &client_id).await {
            Ok(c) => c,
            Err(e) => {
                tracing::info!(code = %e.code, "refused an authorization request's client");
                return error_page(StatusCode::BAD_REQUEST, &e.message);
            }
        };
        let checked = match flow::check_authorize(&self.issuer, &client, &p) {
            Ok(c) => c,
            Err(e) => {
                tracing::info!(code = %e.code, error = error_name(&e), "refused an authorization request");
                return error_page(StatusCode::BAD_REQUEST, &e.message);
            }
        };
        let pending = match flow::begin_consent(&site.store, &checked).await {
            Ok(p) => p,
            Err(e) => return error_page(StatusCode::SERVICE_UNAVAILABLE, &e.message),
        };
        let mut r = self.consent_page(
            StatusCode::OK,
            &client,
            &checked.redirect_uri,
            &checked.scopes,
            &pending.id,
            pending.csrf.expose(),
            None,
        );
        let cookie = format!(
            "{}={}; Path=/authorize; HttpOnly; SameSite=Strict; Max-Age=600{}",
            self.cookie_name(),
            pending.csrf.expose(),
            if self.secure { "; Secure" } else { "" }
        );
        r.headers_mut().insert(
            header::SET_COOKIE,
            HeaderValue::from_str(&cookie).expect("the cookie is visible ASCII"),
        );
        r
    }

    fn cookie_name(&self) -> &'static str {
        if self.secure {
            "__Secure-gatehouse_csrf"
        } else {
            "gatehouse_csrf"
        }
    }

    async fn consent(
        &self,
        site: &Site,
        req: Request<RequestBody>,
        client: IpAddr,
    ) -> Response<Body> {
        let (parts, body) = req.into_parts();
        // A form posted from another site: refused before anything is read.
        if let Some(origin) = parts.headers.get(header::ORIGIN)
            && origin.to_str().ok() != Some(self.origin())
        {
            return error_page(
                StatusCode::FORBIDDEN,
                "This form can only be sent from this server's own consent page.",
            );
        }
        let Some(bytes) = read_body(body).await else {
            return error_page(StatusCode::BAD_REQUEST, "The form could not be read.");
        };
        let form = Form::parse(&bytes);
        if let Some(name) = form.repeated() {
            return error_page(StatusCode::BAD_REQUEST, &Form::repeated_message(name));
        }
        let id = form.get("request").unwrap_or_default();
        let csrf = form.get("csrf").unwrap_or_default();
        let cookie = cookie_value(&parts.headers, self.cookie_name());
        let from = client.to_string();
        let answer = match form.get("decision").as_deref() {
            Some("deny") => {
                flow::deny(
                    &site.store,
                    &self.issuer,
                    &id,
                    &csrf,
                    cookie.as_deref(),
                    &from,
                )
                .await
            }
            Some("approve") => {
                // Every pasted key pays before argon2 checks it, per network
                // (checked first and paid after a refusal, a thousand wrong
                // keys from a hundred addresses had all been checked).
                if let Err(wait) = self.pasted_keys.take(&network(client).to_string()) {
                    return error_page(
                        StatusCode::TOO_MANY_REQUESTS,
                        &format!(
                            "Too many keys tried from this network; try again in {} s.",
                            wait.as_secs().max(1)
                        ),
                    );
                }
                let key = RawKey::new(form.get("api_key").unwrap_or_default().trim());
                let result = flow::approve(
                    &site.store,
                    &self.issuer,
                    &id,
                    &csrf,
                    cookie.as_deref(),
                    &key,
                    client,
                )
                .await;
                if let Err(e) = &result
                    && matches!(
                        e.code,
                        Code::ACTOR_API_KEY_INVALID
                            | Code::OAUTH_SCOPE_INSUFFICIENT
                            | Code::KEY_NETWORK_NOT_ALLOWED
                    )
                {
                    return self.ask_again(site, &id, &csrf, e).await;
                }
                result
            }
            Some("pair") => {
                return match flow::begin_pairing(&site.store, &id, &csrf, cookie.as_deref()).await {
                    Ok(code) => self.pairing_page(&id, &csrf, &code, None),
                    Err(e) => error_page(StatusCode::FORBIDDEN, &e.message),
                };
            }
            Some("paired") => {
                match flow::finish_pairing(
                    &site.store,
                    &self.issuer,
                    &id,
                    &csrf,
                    cookie.as_deref(),
                    &from,
                )
                .await
                {
                    Ok(Some(a)) => Ok(a),
                    Ok(None) => {
                        let code = form.get("pair").unwrap_or_default();
                        return self.pairing_page(&id, &csrf, &code, Some("Not approved yet. Ask the site's admin to run the command below, then continue."));
                    }
                    Err(e) => Err(e),
                }
            }
            _ => return error_page(StatusCode::BAD_REQUEST, "The form names no decision."),
        };
        match answer {
            Ok(a) => redirect(&a.redirect),
            Err(e) => {
                tracing::info!(code = %e.code, "refused a consent form");
                let status = if e.code == Code::OAUTH_CONSENT_INVALID {
                    StatusCode::FORBIDDEN
                } else {
                    status_of(&e)
                };
                error_page(status, &e.message)
            }
        }
    }

    /// The consent page again, after a refused key.
    async fn ask_again(&self, site: &Site, id: &str, csrf: &str, e: &Error) -> Response<Body> {
        match flow::request_client(&site.store, id).await {
            Ok(Some((row, client))) => {
                let scopes = ScopeSet::parse(&row.scopes).unwrap_or_default();
                let why = format!("{} {}", e.message, e.hint.clone().unwrap_or_default());
                self.consent_page(
                    StatusCode::BAD_REQUEST,
                    &client,
                    &row.redirect_uri,
                    &scopes,
                    id,
                    csrf,
                    Some(&why),
                )
            }
            _ => error_page(
                StatusCode::BAD_REQUEST,
                "This authorization request expired; start again from the application.",
            ),
        }
    }

    /// The page that shows a pairing code and waits for an admin.
    fn pairing_page(
        &self,
        request: &str,
        csrf: &str,
        code: &str,
        problem: Option<&str>,
    ) -> Response<Body> {
        let problem = problem
            .map(|p| format!("<p class=\"problem\" role=\"alert\">{}</p>", esc(p)))
            .unwrap_or_default();
        let html = format!(
            r#"<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<meta name="referrer" content="same-origin">
<title>Waiting for approval</title>
<link rel="stylesheet" href="/oauth/consent.css">
</head>
<body>
<main>
<h1>Waiting for an admin</h1>
<p>Give this code to the site's admin. They choose whom the application acts as, a user or a key, in the desktop app (Keys, "Approve a pairing code") or with:</p>
<p class="code">{code}</p>
<pre>gatehouse oauth approve {code} --as EMAIL
gatehouse oauth approve {code} --key-id KEY_ID</pre>
{problem}
<form method="post" action="/authorize">
<input type="hidden" name="request" value="{request}">
<input type="hidden" name="csrf" value="{csrf}">
<input type="hidden" name="pair" value="{code}">
<div class="buttons">
<button type="submit" name="decision" value="paired">Continue</button>
<button type="submit" name="decision" value="deny" class="deny">Cancel</button>
</div>
</form>
</main>
</body>
</html>
"#,
            code = esc(code),
            request = esc(request),
            csrf = esc(csrf),
        );
        let mut r = Response::new(full(html));
        let h = r.headers_mut();
        h.insert(
            header::CONTENT_TYPE,
            HeaderValue::from_static("text/html; charset=utf-8"),
        );
        // The form's answer redirects to the client: any origin may be next.
        h.insert(
            header::CONTENT_SECURITY_POLICY,
            HeaderValue::from_static(
                "default-src 'none'; style-src 'self'; frame-ancestors 'none'; base-uri 'none'",
            ),
        );
        page_headers(h);
        r
    }

    #[allow(clippy::too_many_arguments)]
    fn consent_page(
        &self,
        status: StatusCode,
        client: &Client,
        redirect_uri: &str,
        scopes: &ScopeSet,
        request: &str,
        csrf: &str,
        problem: Option<&str>,
    ) -> Response<Body> {
        let target = url::Url::parse(redirect_uri).ok();
        let host = target
            .as_ref()
            .and_then(|u| u.host_str().map(str::to_string))
            .unwrap_or_default();
        let local = target
            .as_ref()
            .and_then(|u| u.host().map(|h| client::is_loopback_host(&h)))
            .unwrap_or(false);
        let whereto = if local {
            format!(
                "{} (an application on the computer you are using)",
                esc(&host)
            )
        } else {
            esc(&host)
        };
        let list: String = scopes
            .scopes()
            .iter()
            .map(|s: &Scope| format!("<li>{} <code>{}</code></li>", esc(s.words()), s.as_str()))
            .collect();
        let problem = problem
            .map(|p| format!("<p class=\"problem\" role=\"alert\">{}</p>", esc(p)))
            .unwrap_or_default();
        let kind = if client.kind == "document" {
            format!("identified by {}", esc(&client.id))
        } else {
            "registered itself with this server".to_string()
        };
        let html = format!(
            r#"<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<meta name="referrer" content="same-origin">
<title>Connect {name} to Gatehouse</title>
<link rel="stylesheet" href="/oauth/consent.css">
</head>
<body>
<main>
<h1>Connect <em>{name}</em></h1>
<p>The application <strong>{name}</strong> ({kind}) asks to use this Gatehouse site. After you answer, your browser goes back to <strong>{whereto}</strong>.</p>
<p>It asks to:</p>
<ul>{list}</ul>
<p>It will act as the API key you paste below, and never do more than that key may: if the key cannot do something above, neither can the application. The key itself is not kept; revoking it or letting it expire ends this connection.</p>
{problem}
<form method="post" action="/authorize">
<input type="hidden" name="request" value="{request}">
<input type="hidden" name="csrf" value="{csrf}">
<label for="api_key">Gatehouse API key</label>
<input id="api_key" type="password" name="api_key" autocomplete="off" spellcheck="false" placeholder="gatehouse_sk_…">
<div class="buttons">
<button type="submit" name="decision" value="approve">Allow</button>
<button type="submit" name="decision" value="deny" class="deny">Deny</button>
</div>
<p class="small">No key at hand? <button type="submit" name="decision" value="pair" class="deny">Ask an admin to approve</button></p>
</form>
<p class="small">Server: {issuer}</p>
</main>
</body>
</html>
"#,
            name = esc(&client.name),
            request = esc(request),
            csrf = esc(csrf),
            issuer = esc(&self.issuer.issuer),
        );
        let mut r = Response::new(full(html));
        *r.status_mut() = status;
        let form_action = target
            .map(|u| u.origin().ascii_serialization())
            .filter(|o| o != "null")
            .unwrap_or_default();
        let csp = format!(
            "default-src 'none'; style-src 'self'; img-src 'self'; form-action 'self' {form_action}; frame-ancestors 'none'; base-uri 'none'"
        );
        let h = r.headers_mut();
        h.insert(
            header::CONTENT_TYPE,
            HeaderValue::from_static("text/html; charset=utf-8"),
        );
        h.insert(
            header::CONTENT_SECURITY_POLICY,
            HeaderValue::from_str(&csp).unwrap_or(HeaderValue::from_static(
                "default-src 'none'; frame-ancestors 'none'",
            )),
        );
        page_headers(h);
        r
    }
}

const CSS: &str = "body{font:16px/1.5 system-ui,sans-serif;margin:0;background:#f4f4f5;color:#18181b}\
main{max-width:34rem;margin:3rem auto;padding:2rem;background:#fff;border-radius:.75rem;box-shadow:0 1px 3px #0002}\
h1{font-size:1.4rem;margin-top:0}label{display:block;font-weight:600;margin-top:1rem}\
input[type=password]{width:100%;box-sizing:border-box;padding:.5rem;font:inherit;margin-top:.25rem}\
.buttons{display:flex;gap:.75rem;margin-top:1rem}button{font:inherit;padding:.5rem 1.25rem;border-radius:.4rem;border:1px solid #2563eb;background:#2563eb;color:#fff;cursor:pointer}\
button.deny{background:#fff;color:#18181b;border-color:#a1a1aa}.problem{color:#b91c1c;font-weight:600}.small{font-size:.8rem;color:#71717a}\
.code{font:700 2rem/1.2 ui-monospace,monospace;letter-spacing:.1em}pre{background:#f4f4f5;padding:.5rem;overflow:auto}\n";

fn scope_names() -> Vec<&'static str> {
    Scope::ALL.iter().map(|s| s.as_str()).collect()
}

fn with_cors(r: &mut Response<Body>) {
    let h = r.headers_mut();
    h.insert(
        header::ACCESS_CONTROL_ALLOW_ORIGIN,
        HeaderValue::from_static("*"),
    );
    h.insert(
        header::ACCESS_CONTROL_ALLOW_HEADERS,
        HeaderValue::from_static("authorization, content-type, mcp-protocol-version"),
    );
    h.insert(
        header::ACCESS_CONTROL_ALLOW_METHODS,
        HeaderValue::from_static("GET, POST, OPTIONS"),
    );
}

/// Headers of every page. `same-origin`, not `no-referrer`: under
/// `no-referrer` a browser sends `Origin: null` with the form's own POST,
/// which the origin check then refuses.
fn page_headers(h: &mut HeaderMap) {
    h.insert(header::X_FRAME_OPTIONS, HeaderValue::from_static("DENY"));
    h.insert(header::CACHE_CONTROL, HeaderValue::from_static("no-store"));
    h.insert(
        header::REFERRER_POLICY,
        HeaderValue::from_static("same-origin"),
    );
    h.insert(
        header::X_CONTENT_TYPE_OPTIONS,
        HeaderValue::from_static("nosniff"),
    );
}

fn no_store(mut r: Response<Body>) -> Response<Body> {
    r.headers_mut()
        .insert(header::CACHE_CONTROL, HeaderValue::from_static("no-store"));
    r
}

fn error_page(status: StatusCode, message: &str) -> Response<Body> {
    let html = format!(
        "<!doctype html>\n<html lang=\"en\"><head><meta charset=\"utf-8\"><title>Gatehouse: authorization refused</title><link rel=\"stylesheet\" href=\"/oauth/consent.css\"></head><body><main><h1>This authorization cannot go on</h1><p class=\"problem\">{}</p><p>Start again from the application that sent you here.</p></main></body></html>\n",
        esc(message)
    );
    let mut r = Response::new(full(html));
    *r.status_mut() = status;
    let h = r.headers_mut();
    h.insert(
        header::CONTENT_TYPE,
        HeaderValue::from_static("text/html; charset=utf-8"),
    );
    h.insert(
        header::CONTENT_SECURITY_POLICY,
        HeaderValue::from_static("default-src 'none'; style-src 'self'; frame-ancestors 'none'; base-uri 'none'; form-action 'none'"),
    );
    page_headers(h);
    r
}

fn redirect(to: &str) -> Response<Body> {
    let mut r = plain(StatusCode::SEE_OTHER, "");
    match HeaderValue::from_str(to) {
        Ok(v) => {
            r.headers_mut().insert(header::LOCATION, v);
        }
        Err(_) => return error_page(StatusCode::BAD_REQUEST, "The redirect URI cannot be used."),
    }
    page_headers(r.headers_mut());
    r
}

fn oauth_json(status: StatusCode, error: &str, description: &str) -> Response<Body> {
    no_store(json_response(
        status,
        &json!({"error": error, "error_description": description}),
    ))
}

fn oauth_error_response(status: StatusCode, e: &Error) -> Response<Body> {
    let e = &e.for_client();
    let mut body = json!({"error": error_name(e), "error_description": e.message});
    if let Some(h) = &e.hint {
        body["hint"] = json!(h);
    }
    body["code"] = json!(e.code.as_str());
    let mut r = no_store(json_response(status, &body));
    if status == StatusCode::UNAUTHORIZED {
        r.headers_mut().insert(
            header::WWW_AUTHENTICATE,
            HeaderValue::from_static("Basic realm=\"gatehouse\""),
        );
    }
    r
}

fn status_of(e: &Error) -> StatusCode {
    match error_name(e) {
        "invalid_client" => StatusCode::UNAUTHORIZED,
        "server_error" if e.code == Code::ACTOR_API_KEY_INVALID => StatusCode::BAD_REQUEST,
        "server_error" => StatusCode::SERVICE_UNAVAILABLE,
        _ => StatusCode::BAD_REQUEST,
    }
}

async fn read_body(body: RequestBody) -> Option<Vec<u8>> {
    let collected = tokio::time::timeout(
        Duration::from_secs(30),
        Limited::new(body, MAX_FORM_BYTES).collect(),
    )
    .await
    .ok()?
    .ok()?;
    Some(collected.to_bytes().to_vec())
}

/// An `application/x-www-form-urlencoded` body or query. A parameter sent
/// more than once makes the request invalid (RFC 6749 §3.1): the endpoints
/// refuse it ([`Form::repeated`]); `get` reads it as absent.
struct Form(Vec<(String, String)>);

impl Form {
    fn parse(bytes: &[u8]) -> Form {
        Form(url::form_urlencoded::parse(bytes).into_owned().collect())
    }

    /// The first parameter sent more than once, if any.
    fn repeated(&self) -> Option<&str> {
        let mut seen = std::collections::HashSet::new();
        self.0
            .iter()
            .map(|(k, _)| k.as_str())
            .find(|k| !seen.insert(*k))
    }

    /// The refusal of a request that repeats `name`.
    fn repeated_message(name: &str) -> String {
        format!(
            "The request sends the parameter {:?} more than once.",
            crate::mcp::wire::jsonrpc::shorten(name, 40)
        )
    }

    fn get(&self, name: &str) -> Option<String> {
        let mut it = self.0.iter().filter(|(k, _)| k == name);
        let first = it.next()?;
        if it.next().is_some() {
            return None;
        }
        Some(first.1.clone()).filter(|v| !v.is_empty())
    }
}

fn basic_credentials(headers: &HeaderMap) -> Option<(String, Secret)> {
    let v = headers.get(header::AUTHORIZATION)?.to_str().ok()?;
    let (scheme, rest) = v.split_once(' ')?;
    if !scheme.eq_ignore_ascii_case("basic") {
        return None;
    }
    let decoded = base64::engine::general_purpose::STANDARD
        .decode(rest.trim())
        .ok()?;
    let text = String::from_utf8(decoded).ok()?;
    let (id, secret) = text.split_once(':')?;
    let dec = |s: &str| {
        url::form_urlencoded::parse(format!("x={s}").as_bytes())
            .next()
            .map(|(_, v)| v.into_owned())
            .unwrap_or_default()
    };
    Some((dec(id), Secret::new(dec(secret))))
}

fn cookie_value(headers: &HeaderMap, name: &str) -> Option<String> {
    headers
        .get_all(header::COOKIE)
        .iter()
        .filter_map(|v| v.to_str().ok())
        .flat_map(|v| v.split(';'))
        .filter_map(|kv| kv.trim().split_once('='))
        .find(|(k, _)| *k == name)
        .map(|(_, v)| v.to_string())
}

/// Fetches a client metadata document through `http_fetch`'s SSRF guard
/// (vetted addresses, vetted redirects, no proxy), with tighter bounds: the
/// body is read no further than one byte past the largest document.
async fn fetch_document(url: &str, allowed_hosts: &[String]) -> Result<Vec<u8>, Error> {
    let refused = |why: String| {
        crate::access::oauth::oauth_error(Code::OAUTH_CLIENT_INVALID, "invalid_client", why)
    };
    // No redirect is followed (the client ID metadata draft forbids it): an
    // open redirect on a trusted host would otherwise lend that host's URL,
    // shown as the client's identity, to a document anywhere else.
    let fetch = http_fetch::fetch_limited(url, allowed_hosts, client::MAX_DOCUMENT_BYTES + 1, 0);
    let fetched = match tokio::time::timeout(DOCUMENT_TIMEOUT, fetch).await {
        Ok(Ok(f)) => f,
        Ok(Err(e)) => {
            // The caller is anyone: it learns why in general terms, never what
            // a host name resolved to here or what the resolver said.
            tracing::info!(code = %e.code, message = %e.message, "a client metadata document was not fetched");
            let why = match e.code {
                Code::HTTP_FETCH_BLOCKED => "its host is an internal address",
                Code::HTTP_FETCH_URL_INVALID => "its URL cannot be fetched",
                Code::HTTP_FETCH_TOO_MANY_REDIRECTS => {
                    "it answers with a redirect, which is never followed for a client's document"
                }
                Code::HTTP_FETCH_TIMEOUT => "it did not answer in time",
                _ => "its host cannot be resolved or reached",
            };
            return Err(refused(format!(
                "the client metadata document at {url} cannot be fetched: {why}"
            )));
        }
        Err(_) => {
            return Err(refused(format!(
                "the client metadata document at {url} took longer than {} s",
                DOCUMENT_TIMEOUT.as_secs()
            )));
        }
    };
    if fetched.status != 200 {
        return Err(refused(format!(
            "the client metadata document at {url} answered HTTP {}",
            fetched.status
        )));
    }
    if fetched.truncated || fetched.bytes > client::MAX_DOCUMENT_BYTES {
        return Err(refused(format!(
            "the client metadata document at {url} is over {} bytes",
            client::MAX_DOCUMENT_BYTES
        )));
    }
    let body = match (fetched.body, fetched.body_base64) {
        (Some(text), _) => text.into_bytes(),
        (None, Some(b64)) => base64::engine::general_purpose::STANDARD
            .decode(b64)
            .unwrap_or_default(),
        _ => Vec::new(),
    };
    Ok(body)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn forms_refuse_repeated_parameters() {
        let f = Form::parse(b"a=1&b=2&b=3&c=");
        assert_eq!(f.get("a").as_deref(), Some("1"));
        assert_eq!(f.get("b"), None);
        assert_eq!(f.get("c"), None);
        assert_eq!(f.repeated(), Some("b"));
        assert_eq!(Form::parse(b"a=1&b=&c=3").repeated(), None);
    }

    #[test]
    fn page_text_is_escaped() {
        assert_eq!(
            esc("<a href=\"x\">'&"),
            "&lt;a href=&quot;x&quot;&gt;&#39;&amp;"
        );
    }
}

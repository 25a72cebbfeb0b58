//! `/mcp`, `/healthz` and `/readyz`. Every other path is a plain 404, the
//! OAuth discovery paths included (a client that finds them switches to
//! OAuth and drops the configured `Authorization` header).
//!
//! A browser's CORS preflight from an allowed origin is answered before
//! anything else (it carries no key); the answers to such a page's requests
//! name its origin so the page may read them. A request to `/mcp` goes
//! through, in order: `Host` (and an absolute-form target's name) and
//! `Origin` (403), a
//! key in the URL (400), authentication (401, never a fallback to `public`;
//! failures rate limited per client address), the method (405 `Allow: POST`,
//! after the 401 so OAuth-capable clients see the challenge first), the
//! actor's rate (429 `Retry-After`), the request slots (503), the body
//! (413, 415), admission ([`super::super::admit`]), then the era rules:
//!
//! - 2026-07-28 (the body's `_meta` names the version): `MCP-Protocol-Version`,
//!   `Mcp-Method` and, for `tools/call`, `Mcp-Name` must match the body
//!   (400, -32020); an unknown version is 400 with -32022 listing ours; an
//!   unknown method is 404 with -32601.
//! - Handshake revisions: `initialize` is answered per request and no
//!   `Mcp-Session-Id` is ever minted; other requests are served under the
//!   `MCP-Protocol-Version` header's revision (2025-03-26 without one, as the
//!   2025-06-18 transport says); notifications and responses get 202.
//!
//! The answer is JSON unless the client accepts `text/event-stream` and asks
//! for progress (`_meta.progressToken`) or listens (`subscriptions/listen`):
//! then an event stream with keep-alive comments; closing it cancels the call
//! (its audit entry says `cancelled`).

use std::collections::HashMap;
use std::convert::Infallible;
use std::net::{IpAddr, SocketAddr};
use std::pin::Pin;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use base64::Engine;
use futures_util::StreamExt;
use http_body_util::combinators::UnsyncBoxBody;
use http_body_util::{BodyExt, Full, Limited, StreamBody};
use hyper::body::{Bytes, Frame, Incoming};
use hyper::header::{self, HeaderMap, HeaderValue};
use hyper::{Method, Request, Response, StatusCode};
use serde_json::{Map, Value, json};
use tokio::sync::{Semaphore, mpsc, watch};

use super::guard::{Exposure, Refused};
use super::oauth::OAuth;
use super::rate::{Buckets, Share, Shares, per_network};
use super::request_body::{self, RequestBody};
use super::{HttpLimits, Options};
use crate::access::actor::{Actor, Refresher};
use crate::access::keys::{RawKey, VerifyCache};
use crate::error::{Error, codes};
use crate::mcp::server::admit::{Admission, Admitted, Incoming as Message};
use crate::mcp::server::call_record::Late;
use crate::mcp::server::era::{self, LEGACY, MODERN};
use crate::mcp::server::handler::{State, client_error};
use crate::mcp::server::{dispatch, manifest, watch_actor};
use crate::mcp::wire::jsonrpc::{self, ErrorCode, ErrorData};
use crate::site::Site;
use crate::sync::lock;

/// What an open event stream holds (see [`Server::stream_holdings`]).
type StreamHeld = (
    tokio::sync::OwnedSemaphorePermit,
    Share,
    Share<String>,
    Option<Share>,
);

pub type Body = UnsyncBoxBody<Bytes, Infallible>;

const KEEP_ALIVE: Duration = Duration::from_secs(15);
/// The revision a handshake-era request without a version header is served
/// under (the 2025-06-18 transport's rule).
const ASSUMED: &str = "2025-03-26";

/// What is shared between requests: nothing of the protocol.
pub struct Server {
    site: Site,
    require_key: bool,
    exposure: Exposure,
    admission: Admission,
    keys: VerifyCache,
    /// Requests per verified key, by key id.
    key_rates: Buckets,
    /// Keyless requests (and OAuth users) per client address.
    address_rates: Buckets,
    failures: Buckets,
    slots: Arc<Semaphore>,
    /// KiB of request bodies being read: a body is weighed by the admission
    /// budget only once it is whole, so what is still arriving needs its own.
    bodies: Arc<Semaphore>,
    streams: Arc<Semaphore>,
    /// Each client network's share of the request slots (held from the body
    /// to the answer, a held call's wait included) and of the event streams
    /// (a quarter of each: see [`Shares`]).
    slot_shares: Shares,
    stream_shares: Shares,
    /// Each key's (user's; all keyless clients' together) share of the event
    /// streams, wherever they connect from: one key's `subscriptions/listen`
    /// streams from four networks had taken all.
    key_stream_shares: Shares<String>,
    /// Each client network's share of the keyless clients' share, half of
    /// it: one network's keyless streams had taken all of it, leaving every
    /// other keyless client none.
    keyless_stream_shares: Shares,
    limits: HttpLimits,
    late: Late,
    closing: watch::Receiver<bool>,
    pub metrics: Arc<Metrics>,
    /// OAuth, when `--public-url` names the issuer.
    oauth: Option<OAuth>,
}

impl Server {
    pub fn new(
        site: Site,
        opts: &Options,
        bound: SocketAddr,
        late: Late,
        closing: watch::Receiver<bool>,
    ) -> Server {
        let l = &opts.limits;
        let keys = VerifyCache::new(l.key_cache, l.key_cache_ttl);
        let metrics = Metrics {
            key_verifications: keys.verifications(),
            ..Metrics::default()
        };
        let oauth = opts
            .oauth
            .clone()
            .map(|issuer| OAuth::new(issuer, opts.oauth_document_hosts.clone()));
        Server {
            site,
            // A connector only starts OAuth when it is refused: with OAuth on,
            // a request without credentials gets the challenge, not `public`.
            require_key: opts.require_key || oauth.is_some(),
            oauth,
            exposure: super::exposure(opts, bound),
            admission: Admission::new(&l.core),
            keys,
            key_rates: Buckets::new(l.key_rate, 100_000),
            address_rates: Buckets::new(l.key_rate, 100_000),
            failures: Buckets::new(l.auth_failures, 100_000),
            slots: Arc::new(Semaphore::new(l.max_in_flight)),
            bodies: Arc::new(Semaphore::new(l.core.max_total_cost >> 10)),
            streams: Arc::new(Semaphore::new(l.max_streams)),
            slot_shares: Shares::new(per_network(l.max_in_flight)),
            stream_shares: Shares::new(per_network(l.max_streams)),
            key_stream_shares: Shares::new(per_network(l.max_streams)),
            keyless_stream_shares: Shares::new((per_network(l.max_streams) / 2).max(1)),
            limits: l.clone(),
            late,
            closing,
            metrics: Arc::new(metrics),
        }
    }
}

/// The hyper service of one connection from `peer`.
pub fn service(
    server: Arc<Server>,
    peer: SocketAddr,
) -> impl hyper::service::Service<
    Request<Incoming>,
    Response = Response<Body>,
    Error = Infallible,
    Future = impl Future<Output = Result<Response<Body>, Infallible>> + Send,
> + Clone {
    hyper::service::service_fn(move |req: Request<Incoming>| {
        let server = server.clone();
        async move {
            let (parts, body) = req.into_parts();
            let (body, ended) = RequestBody::new(body);
            let mut r = server.handle(Request::from_parts(parts, body), peer).await;
            if request_body::unread(&ended) {
                r.headers_mut()
                    .insert(header::CONNECTION, HeaderValue::from_static("close"));
            }
            Ok(r)
        }
    })
}

pub(super) fn full(bytes: impl Into<Bytes>) -> Body {
    Full::new(bytes.into()).boxed_unsync()
}

pub(super) fn plain(status: StatusCode, text: &'static str) -> Response<Body> {
    let mut r = Response::new(full(text));
    *r.status_mut() = status;
    r.headers_mut().insert(
        header::CONTENT_TYPE,
        HeaderValue::from_static("text/plain; charset=utf-8"),
    );
    r
}

pub(super) fn json_response(status: StatusCode, body: &Value) -> Response<Body> {
    // Sized for a typical answer (a `content_read` is under 1 KiB): growing
    // from serde_json's 128 bytes took three reallocations and copies.
    let mut text = Vec::with_capacity(1024);
    serde_json::to_writer(&mut text, body).expect("JSON serialises");
    let mut r = Response::new(full(text));
    *r.status_mut() = status;
    r.headers_mut().insert(
        header::CONTENT_TYPE,
        HeaderValue::from_static("application/json"),
    );
    r
}

fn rpc_error(status: StatusCode, id: &Value, error: &ErrorData) -> Response<Body> {
    json_response(status, &jsonrpc::error_response(id, error))
}

/// A refusal of the HTTP layer as a JSON-RPC error whose data names
/// Gatehouse's code, hint and detail.
fn refusal(status: StatusCode, rpc: ErrorCode, e: &Error) -> Response<Body> {
    rpc_error(status, &Value::Null, &client_error(rpc, e))
}

fn unauthorized(e: &Error) -> Response<Body> {
    let mut r = refusal(StatusCode::UNAUTHORIZED, ErrorCode::INVALID_REQUEST, e);
    let challenge = if e.code == codes::ACTOR_API_KEY_REQUIRED {
        "Bearer"
    } else {
        "Bearer error=\"invalid_token\""
    };
    r.headers_mut().insert(
        header::WWW_AUTHENTICATE,
        HeaderValue::from_static(challenge),
    );
    r
}

fn too_many(wait: Duration, what: &str) -> Response<Body> {
    let secs = wait.as_secs_f64().ceil().max(1.0) as u64;
    let e = Error::new(codes::RATE_LIMITED, format!("too many requests: {what}"))
        .hint(format!("retry after {secs} s"))
        .detail(json!({"retry_after_s": secs}));
    let mut r = refusal(StatusCode::TOO_MANY_REQUESTS, ErrorCode(-32000), &e);
    r.headers_mut()
        .insert(header::RETRY_AFTER, HeaderValue::from(secs));
    r
}

fn busy(what: &str) -> Response<Body> {
    let mut r = rpc_error(
        StatusCode::SERVICE_UNAVAILABLE,
        &Value::Null,
        &crate::mcp::server::budget::busy(what),
    );
    r.headers_mut()
        .insert(header::RETRY_AFTER, HeaderValue::from_static("1"));
    r
}

fn header_mismatch(id: &Value, why: String) -> Response<Body> {
    rpc_error(
        StatusCode::BAD_REQUEST,
        id,
        &ErrorData::new(
            ErrorCode::HEADER_MISMATCH,
            format!("Header mismatch: {why}"),
            None,
        ),
    )
}

/// The one value of a singleton header; `Err` when it is repeated or not text.
fn single<'a>(headers: &'a HeaderMap, name: &str) -> Result<Option<&'a str>, String> {
    let mut all = headers.get_all(name).iter();
    let Some(v) = all.next() else {
        return Ok(None);
    };
    if all.next().is_some() {
        return Err(format!("{name} is repeated"));
    }
    v.to_str()
        .map(Some)
        .map_err(|_| format!("{name} is not visible ASCII"))
}

/// `Mcp-Name` as sent: plain, or `=?base64?…?=` for values that cannot travel bare.
fn decode_name(raw: &str) -> Option<String> {
    match raw
        .strip_prefix("=?base64?")
        .and_then(|r| r.strip_suffix("?="))
    {
        Some(inner) => base64::engine::general_purpose::STANDARD
            .decode(inner)
            .ok()
            .and_then(|b| String::from_utf8(b).ok()),
        None => Some(raw.to_string()),
    }
}

/// Why a request body was not read whole.
enum BodyFailure {
    TooLarge,
    Unreadable,
    OverBudget,
}

/// Whether a query string carries what looks like a key, read as a server
/// would decode it: percent-escapes undone, `;` a separator like `&`, and
/// `-` in a name taken as `_` (`api%5Fkey`, `a=1;key=x` and `api-key` are
/// keys in a URL too).
fn key_in_query(query: &str) -> bool {
    const NAMES: &[&str] = &[
        "api_key",
        "apikey",
        "key",
        "token",
        "access_token",
        "bearer",
    ];
    // An OAuth token is a bearer credential too, whatever its parameter's name.
    const PREFIXES: &[&str] = &[
        crate::access::keys::PREFIX,
        crate::access::oauth::ACCESS_PREFIX,
        crate::access::oauth::REFRESH_PREFIX,
    ];
    query.split(['&', ';']).any(|pair| {
        url::form_urlencoded::parse(pair.as_bytes()).any(|(name, value)| {
            let name = name.trim().to_ascii_lowercase().replace('-', "_");
            NAMES.contains(&name.as_str())
                || PREFIXES
                    .iter()
                    .any(|p| name.contains(p) || value.contains(p))
        })
    })
}

fn accepts_events(headers: &HeaderMap) -> bool {
    headers
        .get_all(header::ACCEPT)
        .iter()
        .filter_map(|v| v.to_str().ok())
        .any(|v| v.to_ascii_lowercase().contains("text/event-stream"))
}

/// Whether a `Content-Type` value is JSON (any case, parameters allowed).
fn is_json(value: &str) -> bool {
    const JSON: &[u8] = b"application/json";
    let (essence, rest) = value.as_bytes().split_at(JSON.len().min(value.len()));
    essence.eq_ignore_ascii_case(JSON) && matches!(rest.first(), None | Some(b';' | b' ' | b'\t'))
}

impl Server {
    async fn handle(
        self: Arc<Self>,
        req: Request<RequestBody>,
        peer: SocketAddr,
    ) -> Response<Body> {
        match req.uri().path() {
            "/mcp" => {
                // One Origin: with two the request is refused, and unreadable.
                let origin = {
                    let mut all = req.headers().get_all(header::ORIGIN).iter();
                    all.next().filter(|_| all.next().is_none()).cloned()
                };
                if req.headers().contains_key(header::ORIGIN)
                    && req.method() == Method::OPTIONS
                    && req
                        .headers()
                        .contains_key(header::ACCESS_CONTROL_REQUEST_METHOD)
                {
                    return self.preflight(&req, peer);
                }
                let started = Instant::now();
                self.metrics.in_flight.fetch_add(1, Ordering::Relaxed);
                let _gauge = Gauge(&self.metrics.in_flight);
                let mut r = self.mcp(req, peer).await;
                self.metrics.observe(started.elapsed());
                // Whether the answer may be read depends on the Origin.
                r.headers_mut()
                    .append(header::VARY, HeaderValue::from_static("Origin"));
                // A page of an allowed origin may read the answer (a refused
                // origin got its 403 above, which stays unreadable).
                if let Some(origin) = origin
                    && self.exposure.allows_origin(origin.to_str().unwrap_or(""))
                {
                    let h = r.headers_mut();
                    h.insert(header::ACCESS_CONTROL_ALLOW_ORIGIN, origin);
                    h.insert(
                        header::ACCESS_CONTROL_EXPOSE_HEADERS,
                        HeaderValue::from_static(
                            "www-authenticate, retry-after, mcp-protocol-version",
                        ),
                    );
                }
                r
            }
            "/healthz" => plain(StatusCode::OK, "ok\n"),
            "/readyz" => match self.site.store.ready().await {
                Ok(()) => plain(StatusCode::OK, "ready\n"),
                Err(e) => {
                    tracing::warn!(code = %e.code, message = %e.message, "not ready: the database does not answer");
                    plain(
                        StatusCode::SERVICE_UNAVAILABLE,
                        "the database does not answer\n",
                    )
                }
            },
            path if self.oauth.is_some() && OAuth::serves(path) => {
                self.oauth_route(req, peer).await
            }
            _ => plain(StatusCode::NOT_FOUND, "not found\n"),
        }
    }

    /// A browser's CORS preflight for `/mcp`: it carries no credentials, so
    /// it is answered before any key is asked for, and only for an allowed
    /// origin (`--allow-origin`); the request that follows is checked as any.
    fn preflight(&self, req: &Request<RequestBody>, peer: SocketAddr) -> Response<Body> {
        if self.exposure.check(peer, req.uri(), req.headers()).is_err() {
            return plain(
                StatusCode::FORBIDDEN,
                "this Host or origin is not served here\n",
            );
        }
        let origin = req.headers()[header::ORIGIN].clone();
        let mut r = plain(StatusCode::NO_CONTENT, "");
        let h = r.headers_mut();
        h.insert(header::ACCESS_CONTROL_ALLOW_ORIGIN, origin);
        // GET and DELETE too, so a client trying them hears this server's 405
        // instead of a failed preflight it cannot tell from a network error.
        h.insert(
            header::ACCESS_CONTROL_ALLOW_METHODS,
            HeaderValue::from_static("POST, GET, DELETE"),
        );
        h.insert(
            header::ACCESS_CONTROL_ALLOW_HEADERS,
            HeaderValue::from_static(
                "authorization, content-type, accept, mcp-protocol-version, mcp-method, mcp-name, mcp-session-id, last-event-id",
            ),
        );
        h.insert(
            header::ACCESS_CONTROL_MAX_AGE,
            HeaderValue::from_static("600"),
        );
        h.insert(header::VARY, HeaderValue::from_static("Origin"));
        r
    }

    async fn oauth_route(&self, req: Request<RequestBody>, peer: SocketAddr) -> Response<Body> {
        let oauth = self.oauth.as_ref().expect("checked by the caller");
        // Host as for /mcp; browser origins are the routes' own business
        // (CORS for discovery and /token, the issuer's own for the form).
        if let Err(Refused::Host) = self.exposure.check(peer, req.uri(), req.headers()) {
            return refusal(
                StatusCode::FORBIDDEN,
                ErrorCode::INVALID_REQUEST,
                &Error::new(codes::HOST_NOT_ALLOWED, "this Host is not served here")
                    .hint("add the name clients use with --allow-host"),
            );
        }
        let client = self.exposure.client(peer, req.headers());
        oauth
            .route(&self.site, req, client)
            .await
            .unwrap_or_else(|| plain(StatusCode::NOT_FOUND, "not found\n"))
    }

    /// Who is asking: the key's actor, `public`, or the refusal to send.
    async fn authenticate(
        &self,
        headers: &HeaderMap,
        client: IpAddr,
    ) -> Result<Refresher, Response<Body>> {
        // Failed authentications are limited per network, as every other
        // per-client limit: an IPv6 /64 alone holds more addresses than any
        // per-address limit (250 addresses of one /24 had run 2,500 argon2
        // checks without a 429). Named only when a bucket is touched, not
        // for every request a remembered key makes.
        let who = || super::rate::network(client).to_string();
        let mut all = headers.get_all(header::AUTHORIZATION).iter();
        let Some(value) = all.next() else {
            if self.require_key {
                self.metrics.auth_failures.fetch_add(1, Ordering::Relaxed);
                return Err(self.unauthorized(
                    &Error::new(codes::ACTOR_API_KEY_REQUIRED, "this server needs an API key or an OAuth token")
                        .hint("send Authorization: Bearer gatehouse_sk_… (mint one with `gatehouse keys mint`), or connect with OAuth"),
                ));
            }
            return Ok(Refresher::new(Actor::public()));
        };
        let limited = |wait| {
            self.metrics.rate_limited.fetch_add(1, Ordering::Relaxed);
            too_many(wait, "failed authentications from this network")
        };
        if all.next().is_some() {
            // Which of two credentials would be the caller's is a guess.
            self.metrics.auth_failures.fetch_add(1, Ordering::Relaxed);
            return Err(self.unauthorized(
                &Error::new(
                    codes::ACTOR_API_KEY_INVALID,
                    "the request carries more than one Authorization header",
                )
                .hint("send one Authorization: Bearer header"),
            ));
        }
        let token = value
            .to_str()
            .ok()
            .and_then(|v| v.split_once(' '))
            .filter(|(scheme, _)| scheme.eq_ignore_ascii_case("bearer"))
            .map(|(_, t)| t.trim());
        // A token is checked before the network's failures are looked at,
        // as a verified key is: the check is a hash and one indexed read, so
        // the limit guards nothing there, and looked at first it let junk
        // from a shared network refuse every good token from it. A refused
        // token pays after.
        if let (Some(t), Some(oauth)) = (token, &self.oauth)
            && crate::access::oauth::flow::is_token(t)
        {
            return self.authenticate_token(oauth, t, &who()).await;
        }
        // A key this server has verified, or is verifying for another
        // request (whose answer it shares), goes on whatever others from the
        // network did (no argon2 runs for it). The request that starts argon2
        // pays its token first, not after: checked first and spent after, a
        // hundred made-up keys sent at once all passed the check.
        let raw = token.map(RawKey::new);
        let mut paid = false;
        let result = match &raw {
            Some(raw) => {
                let pay = || {
                    paid = true;
                    self.failures.take(&who())
                };
                match self.keys.verify(&self.site.store, raw, pay).await {
                    Ok(result) => result,
                    Err(wait) => return Err(limited(wait)),
                }
            }
            None => Err(crate::access::keys::Refusal::Malformed.error(None)),
        };
        match result {
            Ok(checked) => {
                let actor = Actor::ApiKey {
                    key_id: checked.key.id,
                    roles: checked.key.roles,
                    restrictions: checked.key.restrictions,
                };
                Ok(Refresher::seeded(
                    actor,
                    checked.generation,
                    checked.key.expires_at,
                ))
            }
            Err(e) if e.code == codes::ACTOR_API_KEY_INVALID => {
                self.metrics.auth_failures.fetch_add(1, Ordering::Relaxed);
                // Refusals that ran no argon2 of their own (a malformed key,
                // one answered by another request's check) count after.
                if !paid && let Err(wait) = self.failures.take(&who()) {
                    return Err(limited(wait));
                }
                tracing::info!(reason = ?e.detail.as_ref().and_then(|d| d.get("reason")), "refused a key");
                Err(self.unauthorized(&e))
            }
            Err(e) => {
                tracing::error!(code = %e.code, "could not check a key");
                let mut r = refusal(
                    StatusCode::SERVICE_UNAVAILABLE,
                    ErrorCode::INTERNAL_ERROR,
                    &e,
                );
                r.headers_mut()
                    .insert(header::RETRY_AFTER, HeaderValue::from_static("1"));
                Err(r)
            }
        }
    }

    /// A key restricted to client networks (`keys restrict --from`) is
    /// refused from any other address, and the refusal is audited.
    async fn network_allows(&self, actor: &Actor, client: IpAddr) -> Result<(), Error> {
        let Actor::ApiKey {
            key_id,
            restrictions,
            ..
        } = actor
        else {
            return Ok(());
        };
        let Err(refused) = restrictions.check_network(client) else {
            return Ok(());
        };
        let entry = crate::access::audit::AuditEntry {
            actor: &actor.label(),
            action: crate::access::audit::AuditAction::KeyNetworkRefused,
            subject: key_id,
            detail: serde_json::json!({"from": client.to_string(), "code": codes::KEY_NETWORK_NOT_ALLOWED}),
        };
        if let Err(e) = crate::access::audit::record(&self.site.store, entry).await {
            tracing::error!(code = %e.code, "could not record a refused network");
            return Err(e);
        }
        Err(refused)
    }

    /// How long the approval policy may hold a `tools/call` with `params`
    /// before it runs (see [`crate::mcp::server::hold::longest_wait`]).
    fn hold_wait(&self, actor: &Actor, params: Option<&Map<String, Value>>) -> Duration {
        let Some(spec) = params
            .and_then(|p| p.get("name"))
            .and_then(Value::as_str)
            .and_then(manifest::find)
        else {
            return Duration::ZERO;
        };
        let args = params
            .and_then(|p| p.get("arguments"))
            .unwrap_or(&Value::Null);
        crate::mcp::server::hold::longest_wait(&self.site, actor, spec, args)
    }

    /// A 401 with the challenge: OAuth's (pointing to the resource metadata)
    /// when OAuth is on.
    fn unauthorized(&self, e: &Error) -> Response<Body> {
        let Some(oauth) = &self.oauth else {
            return unauthorized(e);
        };
        let mut r = refusal(StatusCode::UNAUTHORIZED, ErrorCode::INVALID_REQUEST, e);
        let error = (e.code != codes::ACTOR_API_KEY_REQUIRED).then_some("invalid_token");
        r.headers_mut().insert(
            header::WWW_AUTHENTICATE,
            oauth.challenge(error, &crate::access::oauth::ScopeSet::all()),
        );
        r
    }

    /// An OAuth access token: its key's actor, narrowed to its scopes.
    async fn authenticate_token(
        &self,
        oauth: &OAuth,
        token: &str,
        who: &str,
    ) -> Result<Refresher, Response<Body>> {
        use crate::access::oauth::{Secret, flow};
        let store = &self.site.store;
        // Read before the check, like a key's: a change after it moves past.
        let generation = crate::store::access::generation(store).await;
        let checked = match generation {
            Ok(g) => flow::check_access(store, &oauth.issuer, &Secret::new(token))
                .await
                .map(|t| (g, t)),
            Err(e) => Err(e),
        };
        match checked {
            Ok((generation, t)) => Ok(Refresher::seeded_token(
                t.actor,
                generation,
                t.key_expires_at,
                t.grant_id,
                t.token_expires_at,
            )),
            Err(e)
                if matches!(
                    e.code,
                    codes::OAUTH_TOKEN_INVALID | codes::ACTOR_API_KEY_INVALID
                ) =>
            {
                self.metrics.auth_failures.fetch_add(1, Ordering::Relaxed);
                tracing::info!(code = %e.code, "refused an OAuth token");
                if let Err(wait) = self.failures.take(who) {
                    self.metrics.rate_limited.fetch_add(1, Ordering::Relaxed);
                    return Err(too_many(wait, "failed authentications from this network"));
                }
                Err(self.unauthorized(&e))
            }
            Err(e) => {
                tracing::error!(code = %e.code, "could not check an OAuth token");
                let mut r = refusal(
                    StatusCode::SERVICE_UNAVAILABLE,
                    ErrorCode::INTERNAL_ERROR,
                    &e,
                );
                r.headers_mut()
                    .insert(header::RETRY_AFTER, HeaderValue::from_static("1"));
                Err(r)
            }
        }
    }

    async fn mcp(self: &Arc<Self>, req: Request<RequestBody>, peer: SocketAddr) -> Response<Body> {
        let (parts, body) = req.into_parts();
        let headers = &parts.headers;
        match self.exposure.check(peer, &parts.uri, headers) {
            Ok(()) => {}
            Err(Refused::Host) => {
                return refusal(
                    StatusCode::FORBIDDEN,
                    ErrorCode::INVALID_REQUEST,
                    &Error::new(codes::HOST_NOT_ALLOWED, "this Host is not served here")
                        .hint("add the name clients use with --allow-host"),
                );
            }
            Err(Refused::Origin) => {
                return refusal(
                    StatusCode::FORBIDDEN,
                    ErrorCode::INVALID_REQUEST,
                    &Error::new(codes::ORIGIN_NOT_ALLOWED, "requests from this web origin are refused")
                        .hint("add the origin with --allow-origin if a web page of yours must call this server"),
                );
            }
        }
        if parts.uri.query().is_some_and(key_in_query) {
            return refusal(
                StatusCode::BAD_REQUEST,
                ErrorCode::INVALID_REQUEST,
                &Error::new(codes::API_KEY_IN_URL, "an API key or token in the URL is refused")
                    .hint("send it as Authorization: Bearer …; a key or token that was in a URL is in logs and histories: roll the key with `gatehouse keys roll`, or revoke the grant with `gatehouse oauth revoke`"),
            );
        }
        let client = self.exposure.client(peer, headers);
        // Formatted once: the failure and rate buckets' name, the audit's origin.
        let client_text = client.to_string();
        let actor = match self.authenticate(headers, client).await {
            Ok(a) => a,
            Err(r) => return r,
        };
        if let Err(e) = self.network_allows(actor.identity(), client).await {
            return refusal(StatusCode::FORBIDDEN, ErrorCode::INVALID_REQUEST, &e);
        }
        if parts.method != Method::POST {
            let mut r = plain(StatusCode::METHOD_NOT_ALLOWED, "use POST\n");
            r.headers_mut()
                .insert(header::ALLOW, HeaderValue::from_static("POST"));
            return r;
        }
        let json = headers
            .get(header::CONTENT_TYPE)
            .and_then(|v| v.to_str().ok())
            .is_some_and(is_json);
        if !json {
            return rpc_error(
                StatusCode::UNSUPPORTED_MEDIA_TYPE,
                &Value::Null,
                &jsonrpc::invalid_request(
                    Value::Null,
                    "Invalid Request: send Content-Type: application/json",
                )
                .error,
            );
        }
        // The network's share first: one network holding every slot (calls
        // waiting for an approval, bodies trickling in) shuts out the rest.
        let Some(share) = self.slot_shares.take(client) else {
            return busy("this network's requests already hold their share of the request slots");
        };
        let Ok(permit) = self.slots.clone().try_acquire_owned() else {
            return busy("every request slot is taken");
        };
        let slot = (permit, share);
        // Spent once a request slot is held, and given back by every later
        // "busy" (`give_back_rate`): a refusal for want of room takes none of
        // the caller's rate, or retries through a busy spell would leave it
        // refused 429 once there is room again. Before the body is read, so a
        // caller over its rate costs no read.
        if let Some(r) = self.spend_rate(
            actor.identity(),
            &client_text,
            "over this key's request rate",
        ) {
            return r;
        }
        let max = self.limits.max_body_bytes;
        let too_large = || {
            rpc_error(
                StatusCode::PAYLOAD_TOO_LARGE,
                &Value::Null,
                &jsonrpc::invalid_request(
                    Value::Null,
                    format!("Invalid Request: the body is over the limit of {max} bytes"),
                )
                .error,
            )
        };
        let declared = headers
            .get(header::CONTENT_LENGTH)
            .and_then(|v| v.to_str().ok())
            .and_then(|v| v.parse::<u64>().ok());
        if declared.is_some_and(|n| n > max as u64) {
            return too_large();
        }
        let deadline = tokio::time::Instant::now() + self.limits.request_timeout;
        let read = tokio::time::timeout_at(deadline, self.read_body(body, max)).await;
        let (bytes, body_held) = match read {
            Ok(Ok(read)) => read,
            Ok(Err(BodyFailure::TooLarge)) => return too_large(),
            Ok(Err(BodyFailure::Unreadable)) => {
                return plain(StatusCode::BAD_REQUEST, "the body could not be read\n");
            }
            Ok(Err(BodyFailure::OverBudget)) => {
                self.give_back_rate(actor.identity(), &client_text);
                return busy("the request bodies being read already use the memory budget");
            }
            Err(_) => {
                return plain(
                    StatusCode::REQUEST_TIMEOUT,
                    "the body did not arrive in time\n",
                );
            }
        };
        let version_header = match single(headers, "mcp-protocol-version") {
            Ok(v) => v,
            Err(why) => return header_mismatch(&Value::Null, why),
        };
        let batches = matches!(version_header, None | Some("2025-03-26" | "2024-11-05"));
        let admitted = match self.admission.admit(&bytes, batches) {
            Ok(Some(a)) => a,
            Ok(None) => {
                return rpc_error(
                    StatusCode::BAD_REQUEST,
                    &Value::Null,
                    &jsonrpc::invalid_request(Value::Null, "Invalid Request: an empty body").error,
                );
            }
            Err(reply) => {
                let status = match reply["error"]["code"].as_i64() {
                    Some(-32000) => {
                        self.give_back_rate(actor.identity(), &client_text);
                        StatusCode::SERVICE_UNAVAILABLE
                    }
                    _ => StatusCode::BAD_REQUEST,
                };
                return json_response(status, &reply);
            }
        };
        // The parsed message holds its own share now; the text is done with.
        drop(bytes);
        drop(body_held);
        self.serve(
            admitted,
            headers,
            version_header,
            (actor, client, client_text),
            slot,
            deadline,
        )
        .await
    }

    /// Reads a body of at most `max` bytes, holding room in the bodies'
    /// budget for twice what has arrived (its chunks and the one buffer they
    /// are joined into) as it arrives; never waits: a full budget is "busy".
    /// Reserved as bytes come, not as declared: a client that declares 4 MiB
    /// and sends a byte every few seconds holds a byte's room, where 32 of
    /// them used to hold the whole budget for the body deadline.
    async fn read_body(
        &self,
        body: RequestBody,
        max: usize,
    ) -> Result<(Bytes, Option<tokio::sync::OwnedSemaphorePermit>), BodyFailure> {
        let mut body = Limited::new(body, max);
        let mut chunks = Vec::new();
        let mut total = 0usize;
        let mut held: Option<tokio::sync::OwnedSemaphorePermit> = None;
        while let Some(frame) = body.frame().await {
            let frame = frame.map_err(|e| {
                if e.is::<http_body_util::LengthLimitError>() {
                    BodyFailure::TooLarge
                } else {
                    BodyFailure::Unreadable
                }
            })?;
            let Ok(data) = frame.into_data() else {
                continue;
            };
            total += data.len();
            let need = u32::try_from(total.saturating_mul(2).div_ceil(1024)).unwrap_or(u32::MAX);
            let have = held.as_ref().map_or(0, |p| p.num_permits() as u32);
            if need > have {
                let more = self
                    .bodies
                    .clone()
                    .try_acquire_many_owned(need - have)
                    .map_err(|_| BodyFailure::OverBudget)?;
                match &mut held {
                    Some(p) => p.merge(more),
                    None => held = Some(more),
                }
            }
            chunks.push(data);
        }
        let bytes = match chunks.len() {
            0 => Bytes::new(),
            1 => chunks.pop().expect("one chunk"),
            _ => Bytes::from(chunks.concat()),
        };
        Ok((bytes, held))
    }

    /// What an event stream holds while it is open: a stream slot, its
    /// network's share, its key's (or all keyless clients') share, and for a
    /// keyless client its network's part of theirs; or why it cannot open.
    fn stream_holdings(&self, actor: &Actor, client: IpAddr) -> Result<StreamHeld, &'static str> {
        let network = self
            .stream_shares
            .take(client)
            .ok_or("this network's event streams already hold their share of the slots")?;
        let public = matches!(actor, Actor::Public);
        let keyless = if public {
            Some(self.keyless_stream_shares.take(client).ok_or(
                "this network's keyless event streams already hold their share of the slots",
            )?)
        } else {
            None
        };
        let whose = self
            .key_stream_shares
            .take_for(actor.label())
            .ok_or(if public {
                "keyless clients' event streams already hold their share of the slots"
            } else {
                "this key's event streams already hold its share of the slots"
            })?;
        let slot = self
            .streams
            .clone()
            .try_acquire_owned()
            .map_err(|_| "every event stream slot is taken")?;
        Ok((slot, network, whose, keyless))
    }

    /// The bucket the actor's requests spend from and its name there: its
    /// key's, else its address's. One choice for spending and giving back, so
    /// a token never returns to a bucket it was not taken from.
    /// A key's bucket, or for keyless requests the client's: its address,
    /// or its /64 for IPv6, where one client holds the whole /64 (an address
    /// each had let it pass any rate).
    fn rate_bucket<'a>(
        &'a self,
        actor: &'a Actor,
        client_text: &'a str,
    ) -> (&'a Buckets, std::borrow::Cow<'a, str>) {
        use std::borrow::Cow;
        match actor {
            Actor::ApiKey { key_id, .. } => (&self.key_rates, Cow::Borrowed(key_id)),
            // The text is canonical: only a true IPv6 address has a colon.
            _ if client_text.contains(':') => {
                let net = client_text
                    .parse()
                    .map(|ip| super::rate::network(ip).to_string());
                (
                    &self.address_rates,
                    net.map_or(Cow::Borrowed(client_text), Cow::Owned),
                )
            }
            _ => (&self.address_rates, Cow::Borrowed(client_text)),
        }
    }

    /// Gives back the request of the actor's rate [`Server::spend_rate`]
    /// took, for a request then refused without being served.
    fn give_back_rate(&self, actor: &Actor, client_text: &str) {
        let (bucket, who) = self.rate_bucket(actor, client_text);
        bucket.give_back(&who);
    }

    /// Spends one request of the actor's rate; the refusal to send when
    /// there is none left.
    fn spend_rate(&self, actor: &Actor, client_text: &str, what: &str) -> Option<Response<Body>> {
        let (bucket, who) = self.rate_bucket(actor, client_text);
        let wait = bucket.take(&who).err()?;
        self.metrics.rate_limited.fetch_add(1, Ordering::Relaxed);
        if let Actor::ApiKey { key_id, .. } = actor {
            self.metrics.key_limited(key_id);
        }
        Some(too_many(wait, what))
    }

    /// The era rules, then the core.
    async fn serve(
        self: &Arc<Self>,
        admitted: Admitted,
        headers: &HeaderMap,
        version_header: Option<&str>,
        (actor, client, client_text): (Refresher, IpAddr, String),
        slot: (tokio::sync::OwnedSemaphorePermit, super::rate::Share),
        deadline: tokio::time::Instant,
    ) -> Response<Body> {
        let (id, method, params) = match &admitted.message {
            // Nothing to answer, but the era's header rules hold for them as
            // for requests: they had been accepted whatever the headers said.
            Message::Notification { method, params } => {
                return one_way(headers, version_header, Some((method, params.as_ref())))
                    .unwrap_or_else(accepted);
            }
            Message::Response { .. } => {
                return one_way(headers, version_header, None).unwrap_or_else(accepted);
            }
            Message::Batch(items) => {
                let legacy = legacy_version(version_header);
                let Some(legacy) = legacy else {
                    return unsupported(&Value::Null, version_header.unwrap_or(""));
                };
                // A batch is 2025-03-26's; a request of a later era inside one
                // would skip its own header rules (those a gateway routes by).
                if items.iter().any(|item| {
                    item.get("params")
                        .and_then(|p| p.get("_meta"))
                        .is_some_and(|m| m.get(era::META_PROTOCOL_VERSION).is_some())
                }) {
                    return header_mismatch(
                        &Value::Null,
                        format!(
                            "a batch cannot carry a request that names its version in _meta[\"{}\"]; send it alone with its headers",
                            era::META_PROTOCOL_VERSION
                        ),
                    );
                }
                // Every request in it counts against the rate, as it would
                // sent alone (this HTTP request paid for the first).
                let is_request = |i: &Value| {
                    i.get("method").is_some() && i.get("id").is_some_and(jsonrpc::valid_id)
                };
                let requests = items.iter().filter(|i| is_request(i)).count();
                for _ in 1..requests {
                    if let Some(r) = self.spend_rate(
                        actor.identity(),
                        &client_text,
                        "a batch over this key's request rate",
                    ) {
                        return r;
                    }
                }
                // Its calls count in the per-tool metrics, as alone, and run
                // one after another, each held as long as it would be alone.
                let mut calls: Vec<(Value, Tally)> = Vec::new();
                let mut wait = Duration::ZERO;
                // Requests only (ids unique, checked at admission): neither a
                // notification nor an item refused for its id runs a call.
                for i in items.iter().filter(|i| {
                    is_request(i) && i.get("method").and_then(Value::as_str) == Some("tools/call")
                }) {
                    let params = i["params"].as_object();
                    wait += self.hold_wait(actor.identity(), params);
                    let name = params.and_then(|p| p.get("name")).and_then(Value::as_str);
                    let tool = Metrics::tool_index(name);
                    calls.push((i["id"].clone(), Tally::new(&self.metrics, tool)));
                }
                let deadline = deadline + wait;
                let (state, _out) = self.state(actor, (client, client_text), Some(legacy));
                return match tokio::time::timeout_at(deadline, dispatch(&state, admitted)).await {
                    Ok(Some(reply)) => {
                        let replies = reply.as_array().map(Vec::as_slice).unwrap_or_default();
                        for (id, tally) in calls {
                            tally.reply(replies.iter().find(|r| r.get("id") == Some(&id)));
                        }
                        json_response(StatusCode::OK, &reply)
                    }
                    Ok(None) => accepted(),
                    Err(_) => {
                        calls.into_iter().for_each(|(_, t)| t.timed_out());
                        timed_out(&Value::Null)
                    }
                };
            }
            Message::Request { id, method, params } => {
                (id.clone(), method.as_str(), params.as_ref())
            }
        };
        let meta_version = params
            .and_then(|p| p.get("_meta"))
            .and_then(|m| m.get(era::META_PROTOCOL_VERSION))
            .and_then(Value::as_str)
            .map(str::to_string);
        let modern = meta_version.is_some();
        let legacy = if let Some(v) = &meta_version {
            if !era::supported().contains(&v.as_str()) {
                return unsupported(&id, v);
            }
            if let Err(why) = check_headers(headers, version_header, v, method, params) {
                return header_mismatch(&id, why);
            }
            None
        } else if method == "initialize" {
            None
        } else {
            match version_header {
                Some(MODERN) => {
                    return header_mismatch(
                        &id,
                        format!(
                            "MCP-Protocol-Version is {MODERN} but the body has no _meta[\"{}\"]",
                            era::META_PROTOCOL_VERSION
                        ),
                    );
                }
                v => match legacy_version(v) {
                    Some(l) => Some(l),
                    None => return unsupported(&id, v.unwrap_or("")),
                },
            }
        };
        let progress = params
            .and_then(|p| p.get("_meta"))
            .is_some_and(|m| m.get("progressToken").is_some());
        let listen = method == "subscriptions/listen";
        let stream = accepts_events(headers) && (progress || listen);
        if listen && !stream {
            return rpc_error(
                StatusCode::BAD_REQUEST,
                &id,
                &jsonrpc::invalid_request(
                    id.clone(),
                    "Invalid Request: subscriptions/listen needs Accept: text/event-stream",
                )
                .error,
            );
        }
        if method == "tools/call"
            && let Some(oauth) = &self.oauth
            && let Some(held) = actor.identity().scopes()
            && let Some(spec) = params
                .and_then(|p| p.get("name"))
                .and_then(Value::as_str)
                .and_then(manifest::find)
            && !held.covers(spec.action)
        {
            let e = crate::access::oauth::insufficient_scope(held, spec.action);
            self.metrics
                .count(Metrics::tool_index(Some(spec.name)), REFUSED);
            // Refused before the core sees it, yet a call all the same: it
            // gets its entry (the grant's usage counts it as a refusal).
            let empty = Value::Object(serde_json::Map::new());
            let args = params
                .and_then(|p| p.get("arguments"))
                .filter(|a| a.is_object())
                .unwrap_or(&empty);
            let identity = actor.identity();
            let recorded = crate::mcp::server::tools::record(
                &self.site,
                &identity.label(),
                spec.name,
                &crate::mcp::server::tools::args_digest(args),
                ("error", Some(e.code)),
                (&client_text, identity.grant()),
            )
            .await;
            if let Err(failed) = recorded {
                tracing::error!(code = %failed.code, "could not record a call refused for its scope");
                return refusal(
                    StatusCode::SERVICE_UNAVAILABLE,
                    ErrorCode::INTERNAL_ERROR,
                    &failed,
                );
            }
            let needed = crate::access::oauth::ScopeSet::parse(
                e.detail
                    .as_ref()
                    .and_then(|d| d["scope"].as_str())
                    .unwrap_or(""),
            )
            .unwrap_or_else(|_| held.clone());
            let mut r = refusal(StatusCode::FORBIDDEN, ErrorCode::INVALID_REQUEST, &e);
            r.headers_mut().insert(
                header::WWW_AUTHENTICATE,
                oauth.challenge(Some("insufficient_scope"), &needed),
            );
            return r;
        }
        let tool = (method == "tools/call").then(|| {
            let name = params.and_then(|p| p.get("name")).and_then(Value::as_str);
            Metrics::tool_index(name)
        });
        // A call the approval policy may hold waits for its decision before
        // its own bound starts: the request's deadline grows by that wait
        // (it had ended every hold over HTTP after the request timeout).
        let deadline = match tool {
            Some(_) => deadline + self.hold_wait(actor.identity(), params),
            None => deadline,
        };
        let held = if stream {
            match self.stream_holdings(actor.identity(), client) {
                Ok(held) => Some(held),
                Err(why) => {
                    // Refused unserved: the request's rate is given back.
                    self.give_back_rate(actor.identity(), &client_text);
                    return busy(why);
                }
            }
        } else {
            None
        };
        let (state, out) = self.state(actor, (client, client_text), legacy);
        let work = {
            let state = state.clone();
            let watch = self.limits.core.watch_interval;
            async move {
                if listen {
                    // Re-read the actor while the stream is open, so a role
                    // change or revocation in any instance is announced.
                    let watcher = tokio::spawn(watch_actor(state.clone(), watch));
                    let reply = dispatch(&state, admitted).await;
                    watcher.abort();
                    reply
                } else {
                    dispatch(&state, admitted).await
                }
            }
        };
        // Counted however the request ends, a client gone away included.
        let tally = tool.map(|tool| Tally::new(&self.metrics, tool));
        if let Some(held) = held {
            let deadline = (!listen).then_some(deadline);
            let open = StreamOpen::new(&self.metrics);
            return event_stream(Box::pin(work), out, deadline, (slot, held, open), tally);
        }
        drop(out);
        let reply = match tokio::time::timeout_at(deadline, work).await {
            Ok(reply) => reply,
            Err(_) => {
                if let Some(t) = tally {
                    t.timed_out();
                }
                return timed_out(&id);
            }
        };
        drop(slot);
        if let Some(tally) = tally {
            tally.reply(reply.as_ref());
        }
        let Some(reply) = reply else {
            return accepted();
        };
        let status = match reply["error"]["code"].as_i64() {
            Some(-32601) if modern => StatusCode::NOT_FOUND,
            Some(-32022) => StatusCode::BAD_REQUEST,
            _ => StatusCode::OK,
        };
        json_response(status, &reply)
    }

    fn state(
        &self,
        actor: Refresher,
        (client, text): (IpAddr, String),
        legacy: Option<&'static str>,
    ) -> (Arc<State>, mpsc::Receiver<Value>) {
        let (tx, rx) = mpsc::channel(64);
        let state = State::for_request(
            self.site.clone(),
            actor,
            legacy,
            tx,
            self.closing.clone(),
            self.late.clone(),
        );
        state.set_client(client, text);
        (Arc::new(state), rx)
    }
}

/// The handshake revision a version header names (2025-03-26 without one).
fn legacy_version(header: Option<&str>) -> Option<&'static str> {
    let v = header.unwrap_or(ASSUMED);
    LEGACY.iter().copied().find(|l| *l == v)
}

fn unsupported(id: &Value, requested: &str) -> Response<Body> {
    rpc_error(
        StatusCode::BAD_REQUEST,
        id,
        &era::unsupported_version(&jsonrpc::shorten(requested, 40)),
    )
}

/// The refusal of a notification (`notice`: its method and params) or a
/// response whose headers break its era's rules, if they do: the version
/// named in `_meta` checked against the headers as a request's is, else the
/// version header must name a handshake revision.
fn one_way(
    headers: &HeaderMap,
    version_header: Option<&str>,
    notice: Option<(&str, Option<&Map<String, Value>>)>,
) -> Option<Response<Body>> {
    let meta = notice.and_then(|(_, params)| {
        params?
            .get("_meta")?
            .get(era::META_PROTOCOL_VERSION)?
            .as_str()
    });
    match (meta, notice) {
        (Some(v), Some((method, params))) => {
            if !era::supported().contains(&v) {
                return Some(unsupported(&Value::Null, v));
            }
            check_headers(headers, version_header, v, method, params)
                .err()
                .map(|why| header_mismatch(&Value::Null, why))
        }
        // A response cannot name its version: a modern header is taken as is.
        (_, None) if version_header == Some(MODERN) => None,
        // A modern notification need not name it; its method header must match.
        (_, Some((method, params))) if version_header == Some(MODERN) => {
            check_headers(headers, version_header, MODERN, method, params)
                .err()
                .map(|why| header_mismatch(&Value::Null, why))
        }
        _ => legacy_version(version_header)
            .is_none()
            .then(|| unsupported(&Value::Null, version_header.unwrap_or(""))),
    }
}

fn accepted() -> Response<Body> {
    let mut r = Response::new(full(Bytes::new()));
    *r.status_mut() = StatusCode::ACCEPTED;
    r
}

fn timed_out(id: &Value) -> Response<Body> {
    let e = Error::new(codes::CALL_TIMEOUT, "the request did not finish in time")
        .hint("the site's database or the tool's target is slow; retry later");
    rpc_error(
        StatusCode::GATEWAY_TIMEOUT,
        id,
        &client_error(ErrorCode::INTERNAL_ERROR, &e),
    )
}

/// The 2026-07-28 headers against the body.
fn check_headers(
    headers: &HeaderMap,
    version_header: Option<&str>,
    version: &str,
    method: &str,
    params: Option<&Map<String, Value>>,
) -> Result<(), String> {
    match version_header {
        None => return Err("MCP-Protocol-Version is missing".into()),
        Some(h) if h != version => {
            return Err(format!(
                "MCP-Protocol-Version {} does not match the body's {}",
                jsonrpc::shorten(h, 40),
                jsonrpc::shorten(version, 40)
            ));
        }
        Some(_) => {}
    }
    if !era::is_modern(version) {
        return Ok(());
    }
    match single(headers, "mcp-method")? {
        None => return Err("Mcp-Method is missing".into()),
        Some(m) if m != method => {
            return Err(format!(
                "Mcp-Method {} does not match the body's method {}",
                jsonrpc::shorten(m, 40),
                jsonrpc::shorten(method, 40)
            ));
        }
        Some(_) => {}
    }
    let named = match method {
        "tools/call" | "prompts/get" => params.and_then(|p| p.get("name")),
        "resources/read" | "resources/subscribe" | "resources/unsubscribe" => {
            params.and_then(|p| p.get("uri"))
        }
        _ => None,
    };
    if let Some(expected) = named.and_then(Value::as_str) {
        // Never echoed: a name may carry what a client should not have sent.
        match single(headers, "mcp-name")? {
            None => return Err("Mcp-Name is missing".into()),
            Some(raw) if decode_name(raw).as_deref() != Some(expected) => {
                return Err("Mcp-Name does not match the body".into());
            }
            Some(_) => {}
        }
    }
    Ok(())
}

type Work = Pin<Box<dyn Future<Output = Option<Value>> + Send>>;

fn event(message: &Value) -> Bytes {
    let mut b = b"event: message\ndata: ".to_vec();
    b.extend_from_slice(&serde_json::to_vec(message).expect("serialises"));
    b.extend_from_slice(b"\n\n");
    Bytes::from(b)
}

/// An event stream: what the call sends on the way, keep-alive comments, then
/// its reply. Dropping the body (the client closed the stream) drops the
/// call, which cancels it (and its tally says so).
fn event_stream<H: Send + 'static>(
    work: Work,
    out: mpsc::Receiver<Value>,
    deadline: Option<tokio::time::Instant>,
    held: H,
    tally: Option<Tally>,
) -> Response<Body> {
    struct Running<H> {
        work: Work,
        out: mpsc::Receiver<Value>,
        tick: tokio::time::Interval,
        deadline: Option<tokio::time::Instant>,
        _held: H,
        tally: Option<Tally>,
    }
    let mut tick = tokio::time::interval(KEEP_ALIVE);
    tick.reset();
    let start = Some(Running {
        work,
        out,
        tick,
        deadline,
        _held: held,
        tally,
    });
    let frames = futures_util::stream::unfold(start, |state| async move {
        let mut r = state?;
        let far = tokio::time::Instant::now() + Duration::from_secs(365 * 24 * 3600);
        let deadline = r.deadline.unwrap_or(far);
        tokio::select! {
            reply = &mut r.work => {
                let mut chunk = Vec::new();
                while let Ok(m) = r.out.try_recv() {
                    chunk.extend_from_slice(&event(&m));
                }
                if let Some(t) = r.tally.take() {
                    t.reply(reply.as_ref());
                }
                if let Some(reply) = reply {
                    chunk.extend_from_slice(&event(&reply));
                }
                Some((Bytes::from(chunk), None))
            }
            Some(m) = r.out.recv() => Some((event(&m), Some(r))),
            _ = r.tick.tick() => Some((Bytes::from_static(b": keep-alive\n\n"), Some(r))),
            _ = tokio::time::sleep_until(deadline) => {
                if let Some(t) = r.tally.take() {
                    t.timed_out();
                }
                let e = jsonrpc::error_response(&Value::Null, &jsonrpc::internal_error("the request did not finish in time"));
                Some((event(&e), None))
            }
        }
    });
    let body = StreamBody::new(frames.map(|b| Ok::<_, Infallible>(Frame::data(b))));
    let mut r = Response::new(body.boxed_unsync());
    let h = r.headers_mut();
    h.insert(
        header::CONTENT_TYPE,
        HeaderValue::from_static("text/event-stream"),
    );
    h.insert(header::CACHE_CONTROL, HeaderValue::from_static("no-cache"));
    h.insert("x-accel-buffering", HeaderValue::from_static("no"));
    r
}

/// Decrements the in-flight gauge however the request ends.
struct Gauge<'a>(&'a AtomicU64);

impl Drop for Gauge<'_> {
    fn drop(&mut self) {
        self.0.fetch_sub(1, Ordering::Relaxed);
    }
}

/// Latency bucket bounds, in seconds.
const BUCKETS: &[f64] = &[
    0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 10.0,
];

/// Outcomes of a tool call, as the `outcome` label names them: `cancelled`
/// when the client went away (or cancelled) before the answer, `refused` a
/// JSON-RPC error, `error` a tool's own error, `timed_out` the request's bound.
const OUTCOMES: [&str; 5] = ["cancelled", "refused", "error", "ok", "timed_out"];
const CANCELLED: usize = 0;
const REFUSED: usize = 1;
const TIMED_OUT: usize = 4;

/// One tool call's count in the metrics, made once however its request ends:
/// the reply's outcome, `timed_out` at the request's bound, or `cancelled`
/// when it is dropped unanswered (the client closed its connection or its
/// stream, and hyper dropped the request's future with the call).
struct Tally {
    metrics: Arc<Metrics>,
    tool: usize,
    open: bool,
}

impl Tally {
    fn new(metrics: &Arc<Metrics>, tool: usize) -> Tally {
        Tally {
            metrics: metrics.clone(),
            tool,
            open: true,
        }
    }

    fn reply(mut self, reply: Option<&Value>) {
        self.open = false;
        self.metrics.call(self.tool, reply);
    }

    fn timed_out(mut self) {
        self.open = false;
        self.metrics.count(self.tool, TIMED_OUT);
    }
}

impl Drop for Tally {
    fn drop(&mut self) {
        if self.open {
            self.metrics.count(self.tool, CANCELLED);
        }
    }
}

/// An open event stream in the gauge, for as long as its body lives (the
/// request's own in-flight count ends when the stream's headers are sent).
struct StreamOpen(Arc<Metrics>);

impl StreamOpen {
    fn new(metrics: &Arc<Metrics>) -> StreamOpen {
        metrics.streams_open.fetch_add(1, Ordering::Relaxed);
        StreamOpen(metrics.clone())
    }
}

impl Drop for StreamOpen {
    fn drop(&mut self) {
        self.0.streams_open.fetch_sub(1, Ordering::Relaxed);
    }
}

/// What `--metrics-listen` shows (Prometheus text format). Labels are tool
/// names from the manifest and fixed outcomes only: nothing a client sent.
/// Every request updates it: counters are atomics, no lock or map on the way.
pub struct Metrics {
    pub in_flight: AtomicU64,
    /// Event streams open (a listen, a call's progress).
    streams_open: AtomicU64,
    pub auth_failures: AtomicU64,
    pub rate_limited: AtomicU64,
    /// Keys verified in full (argon2), shared with the verify cache.
    pub key_verifications: Arc<AtomicU64>,
    /// Calls by tool (manifest order, then `unknown`) and outcome
    /// ([`OUTCOMES`]): `tool * OUTCOMES.len() + outcome`.
    calls: Box<[AtomicU64]>,
    /// Requests at or under each of [`BUCKETS`], all requests, and the
    /// nanoseconds they took.
    latency: [AtomicU64; BUCKETS.len()],
    requests: AtomicU64,
    took_ns: AtomicU64,
    /// Requests refused for a key's rate, by key id: which client is over
    /// its budget. Only verified keys reach the bucket, so the labels are ids
    /// the site minted (public identifiers, never secrets), and at most
    /// [`LIMITED_KEYS`] of them; later ones count under `other`.
    limited_keys: Mutex<HashMap<String, u64>>,
}

/// Distinct keys the rate-limited counter names before it lumps the rest.
const LIMITED_KEYS: usize = 1000;

impl Default for Metrics {
    fn default() -> Self {
        let tools = manifest::all().len() + 1;
        Metrics {
            in_flight: AtomicU64::new(0),
            streams_open: AtomicU64::new(0),
            auth_failures: AtomicU64::new(0),
            rate_limited: AtomicU64::new(0),
            key_verifications: Arc::default(),
            calls: (0..tools * OUTCOMES.len())
                .map(|_| AtomicU64::new(0))
                .collect(),
            latency: Default::default(),
            requests: AtomicU64::new(0),
            took_ns: AtomicU64::new(0),
            limited_keys: Mutex::default(),
        }
    }
}

impl Metrics {
    /// The tool's row in [`Metrics::calls`]: its manifest position, or the
    /// last row (`unknown`) for a name the manifest does not have.
    fn tool_index(name: Option<&str>) -> usize {
        let tools = manifest::all();
        name.and_then(|n| tools.iter().position(|t| t.name == n))
            .unwrap_or(tools.len())
    }

    fn key_limited(&self, key_id: &str) {
        let mut keys = lock(&self.limited_keys);
        let label = if keys.contains_key(key_id) || keys.len() < LIMITED_KEYS {
            key_id
        } else {
            "other"
        };
        *keys.entry(label.to_string()).or_default() += 1;
    }

    fn call(&self, tool: usize, reply: Option<&Value>) {
        let outcome = match reply {
            None => CANCELLED,
            Some(r) if r.get("error").is_some() => REFUSED,
            Some(r) if r["result"]["isError"] == json!(true) => 2,
            Some(_) => 3,
        };
        self.count(tool, outcome);
    }

    fn count(&self, tool: usize, outcome: usize) {
        if let Some(n) = self.calls.get(tool * OUTCOMES.len() + outcome) {
            n.fetch_add(1, Ordering::Relaxed);
        }
    }

    fn observe(&self, took: Duration) {
        let s = took.as_secs_f64();
        for (n, b) in self.latency.iter().zip(BUCKETS) {
            if s <= *b {
                n.fetch_add(1, Ordering::Relaxed);
            }
        }
        self.requests.fetch_add(1, Ordering::Relaxed);
        let ns = u64::try_from(took.as_nanos()).unwrap_or(u64::MAX);
        self.took_ns.fetch_add(ns, Ordering::Relaxed);
    }

    /// The Prometheus text exposition.
    pub fn render(&self) -> String {
        let mut o = String::new();
        o.push_str("# TYPE gatehouse_http_in_flight gauge\n");
        o.push_str(&format!(
            "gatehouse_http_in_flight {}\n",
            self.in_flight.load(Ordering::Relaxed)
        ));
        o.push_str("# TYPE gatehouse_http_streams_open gauge\n");
        o.push_str(&format!(
            "gatehouse_http_streams_open {}\n",
            self.streams_open.load(Ordering::Relaxed)
        ));
        o.push_str("# TYPE gatehouse_http_auth_failures_total counter\n");
        o.push_str(&format!(
            "gatehouse_http_auth_failures_total {}\n",
            self.auth_failures.load(Ordering::Relaxed)
        ));
        o.push_str("# TYPE gatehouse_http_rate_limited_total counter\n");
        o.push_str(&format!(
            "gatehouse_http_rate_limited_total {}\n",
            self.rate_limited.load(Ordering::Relaxed)
        ));
        o.push_str("# TYPE gatehouse_http_rate_limited_key_total counter\n");
        let mut keys: Vec<_> = self
            .limited_keys
            .lock()
            .expect("lock")
            .iter()
            .map(|(k, v)| (k.clone(), *v))
            .collect();
        keys.sort();
        for (key, n) in keys {
            o.push_str(&format!(
                "gatehouse_http_rate_limited_key_total{{key_id=\"{key}\"}} {n}\n"
            ));
        }
        o.push_str("# TYPE gatehouse_key_verifications_total counter\n");
        o.push_str(&format!(
            "gatehouse_key_verifications_total {}\n",
            self.key_verifications.load(Ordering::Relaxed)
        ));
        o.push_str("# TYPE gatehouse_tool_calls_total counter\n");
        let names = manifest::all().iter().map(|t| t.name).chain(["unknown"]);
        let mut calls: Vec<_> = names
            .flat_map(|tool| OUTCOMES.iter().map(move |outcome| (tool, *outcome)))
            .zip(self.calls.iter())
            .map(|(k, n)| (k, n.load(Ordering::Relaxed)))
            .filter(|(_, n)| *n > 0)
            .collect();
        calls.sort();
        for ((tool, outcome), n) in calls {
            o.push_str(&format!(
                "gatehouse_tool_calls_total{{tool=\"{tool}\",outcome=\"{outcome}\"}} {n}\n"
            ));
        }
        o.push_str("# TYPE gatehouse_http_request_seconds histogram\n");
        for (n, b) in self.latency.iter().zip(BUCKETS) {
            let n = n.load(Ordering::Relaxed);
            o.push_str(&format!(
                "gatehouse_http_request_seconds_bucket{{le=\"{b}\"}} {n}\n"
            ));
        }
        let requests = self.requests.load(Ordering::Relaxed);
        let sum = self.took_ns.load(Ordering::Relaxed) as f64 / 1e9;
        o.push_str(&format!(
            "gatehouse_http_request_seconds_bucket{{le=\"+Inf\"}} {requests}\n"
        ));
        o.push_str(&format!("gatehouse_http_request_seconds_sum {sum}\n"));
        o.push_str(&format!(
            "gatehouse_http_request_seconds_count {requests}\n"
        ));
        o
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_key_in_the_query_string_is_recognised_however_it_is_escaped() {
        assert!(key_in_query("api_key=x"));
        assert!(key_in_query("a=1&token=abc"));
        assert!(key_in_query("x=gatehouse_sk_abc"));
        assert!(key_in_query("t=gatehouse_at_abc"));
        assert!(key_in_query("gatehouse%5Frt%5Fabc"));
        assert!(!key_in_query("a=1&b=2"));
        // Escaped or separated otherwise, as a server would decode them.
        assert!(key_in_query("api%5Fkey=x"));
        assert!(key_in_query("x=gatehouse%5Fsk%5Fabc"));
        assert!(key_in_query("a=1;key=x"));
        assert!(key_in_query("api-key=x"));
        assert!(key_in_query("Access%2DToken=x"));
        assert!(key_in_query("gatehouse_sk_abc"));
    }

    #[test]
    fn json_is_its_exact_media_type_and_event_stream_any_case() {
        assert!(is_json("application/json"));
        assert!(is_json("Application/JSON; charset=utf-8"));
        assert!(!is_json("application/jso"));
        assert!(!is_json("application/jsonx"));
        assert!(!is_json("application/json-seq"));
        assert!(is_json("application/json ;charset=utf-8"));
        assert!(!is_json("text/plain; application/json"));
        let mut h = HeaderMap::new();
        h.append(header::ACCEPT, HeaderValue::from_static("application/json"));
        assert!(!accepts_events(&h));
        h.append(
            header::ACCEPT,
            HeaderValue::from_static("application/json, Text/Event-Stream"),
        );
        assert!(accepts_events(&h));
    }

    #[test]
    fn metrics_count_calls_by_tool_and_outcome_and_time_requests() {
        let m = Metrics::default();
        let read = Metrics::tool_index(Some("content_read"));
        let ok = json!({"result": {"isError": false}});
        m.call(read, Some(&ok));
        m.call(read, Some(&ok));
        m.call(read, Some(&json!({"error": {"code": -32602}})));
        m.call(Metrics::tool_index(Some("no_such_tool")), None);
        m.observe(Duration::from_millis(3));
        m.observe(Duration::from_millis(30));
        let text = m.render();
        for line in [
            "gatehouse_tool_calls_total{tool=\"content_read\",outcome=\"ok\"} 2\n",
            "gatehouse_tool_calls_total{tool=\"content_read\",outcome=\"refused\"} 1\n",
            "gatehouse_tool_calls_total{tool=\"unknown\",outcome=\"cancelled\"} 1\n",
            "gatehouse_http_request_seconds_bucket{le=\"0.0025\"} 0\n",
            "gatehouse_http_request_seconds_bucket{le=\"0.005\"} 1\n",
            "gatehouse_http_request_seconds_bucket{le=\"0.05\"} 2\n",
            "gatehouse_http_request_seconds_count 2\n",
            "gatehouse_http_request_seconds_sum 0.033\n",
        ] {
            assert!(text.contains(line), "{line} in {text}");
        }
        assert!(!text.contains("outcome=\"error\""), "{text}");
    }

    #[test]
    fn a_call_is_tallied_once_however_its_request_ends() {
        let m = Arc::new(Metrics::default());
        let fetch = Metrics::tool_index(Some("http_fetch"));
        drop(Tally::new(&m, fetch));
        Tally::new(&m, fetch).timed_out();
        Tally::new(&m, fetch).reply(Some(&json!({"result": {}})));
        let open = StreamOpen::new(&m);
        assert!(m.render().contains("gatehouse_http_streams_open 1\n"));
        drop(open);
        let text = m.render();
        for line in [
            "gatehouse_tool_calls_total{tool=\"http_fetch\",outcome=\"cancelled\"} 1\n",
            "gatehouse_tool_calls_total{tool=\"http_fetch\",outcome=\"timed_out\"} 1\n",
            "gatehouse_tool_calls_total{tool=\"http_fetch\",outcome=\"ok\"} 1\n",
            "gatehouse_http_streams_open 0\n",
        ] {
            assert!(text.contains(line), "{line} in {text}");
        }
    }

    #[test]
    fn mcp_name_is_read_plain_or_base64() {
        assert_eq!(decode_name("content_read").as_deref(), Some("content_read"));
        assert_eq!(decode_name("=?base64?aMOpbGxv?=").as_deref(), Some("héllo"));
        assert_eq!(decode_name("=?base64?!!?="), None);
    }
}

//! Method dispatch and the server's little state: the actor as last read from
//! the store, the manifest it was last shown, the legacy session (if a client
//! made the `initialize` handshake) and the open `subscriptions/listen` streams.
//!
//! Every `tools/list` and `tools/call` re-reads the actor ([`actor::refresh`]):
//! a role change or a revoked key applies to the very next call. When the
//! re-read manifest differs from the last one, `notifications/tools/list_changed`
//! goes to the legacy session and to every modern subscription that asked for it.

use std::collections::HashMap;
use std::net::IpAddr;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, OnceLock};

use rmcp::model::{
    DiscoverResult, Implementation, InitializeResult, ListToolsResult, ProtocolVersion,
    ServerCapabilities, ToolsCapability,
};
use serde_json::{Map, Value, json};
use tokio::sync::{mpsc, oneshot, watch};

use super::call_record::{CallAudit, Late};
use super::era::{self, RequestMeta};
use super::tools;
use crate::access::actor::{self, Actor};
use crate::error::{Error, codes};
use crate::mcp::server::manifest;
use crate::mcp::wire::jsonrpc::{self, internal_error, invalid_params, method_not_found};
use crate::site::Site;
use crate::sync::lock;

/// Where `initialize` names the actor the caller is served as (the shape of
/// `gatehouse whoami --json`), so a client such as `config doctor` can show
/// who a key is on a remote server. The caller learns only what its own
/// credentials are.
pub const ACTOR_META: &str = "gatehouse/actor";

const INSTRUCTIONS: &str = "Gatehouse gives scoped access to one site's content. Read with content_list, content_read and content_search; the tools listed are those your credentials allow, and every call is checked again.";

/// The negotiated legacy session, once `initialize` was answered.
#[derive(Debug, Clone)]
struct Session {
    version: &'static str,
    /// The client's name, when it can ask its user (form elicitation).
    asks: Option<String>,
}

/// Requests the server sent to the client, waiting for their responses.
type Pending = Mutex<HashMap<String, oneshot::Sender<Result<Value, jsonrpc::ErrorData>>>>;

pub struct State {
    site: Site,
    /// The actor as resolved at startup, re-read per call (cheaply: see
    /// [`actor::Refresher`]).
    actor: actor::Refresher,
    /// The manifest names last computed, to notice changes, and the actor
    /// they were computed for (`None` after a refusal).
    manifest: Mutex<(Option<Actor>, Vec<&'static str>)>,
    session: Mutex<Option<Session>>,
    /// Open modern subscriptions that asked for `toolsListChanged`, by id text.
    subscriptions: Mutex<HashMap<String, Value>>,
    out: mpsc::Sender<Value>,
    closing: watch::Receiver<bool>,
    /// Audit entries of calls cut short, still being written.
    late: Late,
    /// Requests sent to the client ([`State::request_client`]).
    pending: Pending,
    next_request: AtomicU64,
    /// Where calls come from, for each call's audit entry (key usage):
    /// `stdio` with the client's name, or the HTTP client's address.
    origin: Mutex<String>,
    /// The HTTP client's address, which a key's networks are checked against
    /// again when a held call's yes comes (`None` on stdio).
    network: OnceLock<IpAddr>,
    /// Why the actor is refused now (revoked, expired, removed), as last
    /// re-read: an open listen ends with it, after its `list_changed`.
    refused: watch::Sender<Option<crate::Error>>,
}

/// How one request is served.
#[derive(Debug, Clone)]
struct Served {
    version: String,
    modern: bool,
}

type RpcResult = Result<Value, jsonrpc::ErrorData>;

impl State {
    pub fn new(
        site: Site,
        identity: Actor,
        out: mpsc::Sender<Value>,
        closing: watch::Receiver<bool>,
    ) -> State {
        State {
            manifest: Mutex::new((None, manifest::names(&identity))),
            site,
            actor: actor::Refresher::new(identity),
            session: Mutex::new(None),
            subscriptions: Mutex::new(HashMap::new()),
            out,
            closing,
            late: Late::default(),
            pending: Mutex::default(),
            next_request: AtomicU64::new(1),
            origin: Mutex::new("stdio".into()),
            network: OnceLock::new(),
            refused: watch::Sender::new(None),
        }
    }

    /// The state of one stateless HTTP request: nothing in it outlives the
    /// request. `legacy` is the handshake revision the request is served under
    /// when it carries no 2026-07-28 `_meta` (from its `MCP-Protocol-Version`
    /// header; `None` for `initialize`, which negotiates its own); `late` is
    /// the server's, so it can wait for every cut-short call's entry.
    pub fn for_request(
        site: Site,
        actor: actor::Refresher,
        legacy: Option<&'static str>,
        out: mpsc::Sender<Value>,
        closing: watch::Receiver<bool>,
        late: Late,
    ) -> State {
        State {
            manifest: Mutex::new((None, manifest::names(actor.identity()))),
            site,
            actor,
            // Stateless HTTP: no session remembers what the client can do.
            session: Mutex::new(legacy.map(|version| Session {
                version,
                asks: None,
            })),
            subscriptions: Mutex::new(HashMap::new()),
            out,
            closing,
            late,
            pending: Mutex::default(),
            next_request: AtomicU64::new(1),
            origin: Mutex::new("stdio".into()),
            network: OnceLock::new(),
            refused: watch::Sender::new(None),
        }
    }

    /// Entries of cut-short calls the server must wait for before it exits.
    pub fn late_records(&self) -> Late {
        self.late.clone()
    }

    pub fn site(&self) -> &Site {
        &self.site
    }

    fn server_info() -> Implementation {
        Implementation::new("gatehouse", crate::version())
    }

    fn capabilities() -> ServerCapabilities {
        let mut tools = ToolsCapability::default();
        tools.list_changed = Some(true);
        let mut caps = ServerCapabilities::default();
        caps.tools = Some(tools);
        caps
    }

    /// Whether anyone would hear a `list_changed` (the watcher polls only then).
    pub fn has_listeners(&self) -> bool {
        lock(&self.session).is_some() || !lock(&self.subscriptions).is_empty()
    }

    /// The batch form of JSON-RPC is allowed only by the 2025-03-26 and 2024-11-05 revisions.
    pub fn batches_allowed(&self) -> bool {
        matches!(
            self.session
                .lock()
                .expect("lock")
                .as_ref()
                .map(|s| s.version),
            Some("2025-03-26" | "2024-11-05")
        )
    }

    /// The actor as the store has it now; notices manifest changes on the way.
    pub async fn actor_now(&self) -> crate::Result<Actor> {
        // Over HTTP, a key's networks are checked against the client on
        // every call, as its roles are: checked once per request, a call of
        // a batch after a held one ran from a network the key had since
        // been moved off.
        let refreshed = self.actor.refresh(&self.site.store).await.and_then(|a| {
            if let (Actor::ApiKey { restrictions, .. }, Some(client)) = (&a, self.network.get()) {
                restrictions.check_network(*client)?;
            }
            Ok(a)
        });
        let (actor, names) = match &refreshed {
            Ok(a) => {
                if self.refused.borrow().is_some() {
                    self.refused.send_replace(None);
                }
                // The manifest is the actor's alone: the same actor as last
                // time (every call while nothing changes) shows the same one.
                if lock(&self.manifest).0.as_ref() == Some(a) {
                    return refreshed;
                }
                (Some(a.clone()), manifest::names(a))
            }
            // A revoked key or removed user may do nothing: the manifest is empty.
            Err(e) if is_actor_refusal(e) => (None, Vec::new()),
            Err(_) => return refreshed,
        };
        let changed = {
            let mut last = lock(&self.manifest);
            let changed = last.1 != names;
            *last = (actor, names);
            changed
        };
        if changed {
            tracing::info!("the actor's tool manifest changed; notifying the client");
            self.notify_list_changed().await;
        }
        if let Err(e) = &refreshed
            && is_actor_refusal(e)
        {
            self.refused.send_replace(Some(e.clone()));
        }
        refreshed
    }

    async fn notify_list_changed(&self) {
        let legacy = lock(&self.session).is_some();
        if legacy {
            self.send(jsonrpc::notification(
                "notifications/tools/list_changed",
                None,
            ))
            .await;
        }
        let subs: Vec<Value> = self
            .subscriptions
            .lock()
            .expect("lock")
            .values()
            .cloned()
            .collect();
        for id in subs {
            self.send(jsonrpc::notification(
                "notifications/tools/list_changed",
                Some(json!({"_meta": {era::META_SUBSCRIPTION_ID: id}})),
            ))
            .await;
        }
    }

    pub async fn send(&self, message: Value) {
        // Fails only when the writer is gone, i.e. the server is shutting down.
        let _ = self.out.send(message).await;
    }

    /// Sets where this state's calls come from (the HTTP client's address).
    pub fn set_origin(&self, origin: String) {
        *lock(&self.origin) = origin;
    }

    /// Sets the HTTP client's address (`text` is its audit form).
    pub fn set_client(&self, client: IpAddr, text: String) {
        let _ = self.network.set(client);
        self.set_origin(text);
    }

    fn origin(&self) -> String {
        lock(&self.origin).clone()
    }

    /// The client's name when it declared it can ask its user (form
    /// elicitation, handshake revisions from 2025-06-18 on).
    pub fn client_asks(&self) -> Option<String> {
        self.session
            .lock()
            .expect("lock")
            .as_ref()
            .and_then(|s| s.asks.clone())
    }

    /// Sends a request to the client on this session's channel; the receiver
    /// gets its response (dropped unanswered when the session ends).
    pub async fn request_client(
        &self,
        method: &str,
        params: Value,
    ) -> (Value, oneshot::Receiver<Result<Value, jsonrpc::ErrorData>>) {
        let n = self.next_request.fetch_add(1, Ordering::Relaxed);
        let id = json!(format!("gatehouse-{n}"));
        let (tx, rx) = oneshot::channel();
        self.pending
            .lock()
            .expect("lock")
            .insert(id.to_string(), tx);
        self.send(json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params}))
            .await;
        (id, rx)
    }

    /// Forgets a request sent to the client whose answer no one awaits any more.
    pub fn forget_client_request(&self, id: &Value) {
        lock(&self.pending).remove(&id.to_string());
    }

    /// Gives up on a request sent to the client and tells it why.
    pub async fn cancel_client_request(&self, id: &Value, reason: &str) {
        lock(&self.pending).remove(&id.to_string());
        self.send(jsonrpc::notification(
            "notifications/cancelled",
            Some(json!({"requestId": id, "reason": reason})),
        ))
        .await;
    }

    /// A response from the client: delivered to the request that awaits it;
    /// one that answers nothing we asked is dropped.
    pub fn on_response(&self, id: &Value, outcome: Result<Value, jsonrpc::ErrorData>) {
        let waiting = lock(&self.pending).remove(&id.to_string());
        match waiting {
            Some(tx) => {
                let _ = tx.send(outcome);
            }
            None => tracing::debug!(
                id = %jsonrpc::shorten(&id.to_string(), 40),
                "ignoring a response to no request of ours"
            ),
        }
    }

    /// Handles a notification from the client.
    pub fn handle_notification(&self, method: &str, _params: Option<&Map<String, Value>>) {
        match method {
            "notifications/initialized" => tracing::debug!("client confirmed initialization"),
            // Cancellation is handled by the loop, which owns the in-flight tasks.
            "notifications/cancelled" => {}
            other => {
                tracing::debug!(method = %jsonrpc::shorten(other, 80), "ignoring notification")
            }
        }
    }

    /// Handles one request; `None` means no response is due.
    pub async fn handle_request(
        self: &Arc<Self>,
        id: &Value,
        method: &str,
        params: Option<Map<String, Value>>,
    ) -> Option<Value> {
        let result = self.dispatch(id, method, params).await;
        Some(match result {
            Ok(Some(result)) => jsonrpc::response(id, result),
            Ok(None) => return None,
            Err(error) => jsonrpc::error_response(id, &error),
        })
    }

    async fn dispatch(
        self: &Arc<Self>,
        id: &Value,
        method: &str,
        params: Option<Map<String, Value>>,
    ) -> Result<Option<Value>, jsonrpc::ErrorData> {
        const KNOWN: &[&str] = &[
            "initialize",
            "ping",
            "server/discover",
            "tools/list",
            "tools/call",
            "subscriptions/listen",
        ];
        if !KNOWN.contains(&method) {
            return Err(method_not_found(method));
        }
        let meta = era::request_meta(params.as_ref())?;
        if method == "initialize" {
            return self.initialize(params.as_ref()).await.map(Some);
        }
        let served = match meta {
            Some(RequestMeta { version, .. }) => Served {
                modern: era::is_modern(&version),
                version,
            },
            None => {
                let session = lock(&self.session).clone();
                match (session, method) {
                    (Some(s), _) => Served {
                        version: s.version.to_string(),
                        modern: false,
                    },
                    // The handshake revisions allow ping before initialize.
                    (None, "ping") => return Ok(Some(json!({}))),
                    (None, _) => return Err(era::missing_meta()),
                }
            }
        };
        let result = match method {
            "ping" if !served.modern => Ok(json!({})),
            // 2026-07-28 removed ping and has discover and subscriptions only.
            "ping" => Err(method_not_found(method)),
            "server/discover" if served.modern => Ok(self.discover()),
            "server/discover" => Err(method_not_found(method)),
            "subscriptions/listen" if served.modern => {
                return self.listen(id, params.as_ref(), &served).await;
            }
            "subscriptions/listen" => Err(method_not_found(method)),
            "tools/list" => self.list_tools(params.as_ref()).await,
            "tools/call" => self.call_tool(params.as_ref(), &served).await,
            _ => Err(method_not_found(method)),
        }?;
        Ok(Some(finish(
            &served,
            result,
            method == "tools/list" || method == "server/discover",
        )))
    }

    async fn initialize(&self, params: Option<&Map<String, Value>>) -> RpcResult {
        let requested = params
            .and_then(|p| p.get("protocolVersion"))
            .and_then(Value::as_str)
            .ok_or_else(|| {
                invalid_params("Invalid params: initialize needs a string protocolVersion")
            })?;
        let version = {
            let mut session = lock(&self.session);
            if session.is_some() {
                return Err(jsonrpc::invalid_request(
                    Value::Null,
                    "Invalid Request: initialize was already answered; start a new server process to start over",
                )
                .error);
            }
            let version = era::negotiate(requested);
            *session = Some(Session {
                version,
                asks: client_asks(params, version),
            });
            version
        };
        if let Some(name) = params
            .and_then(|p| p.get("clientInfo"))
            .and_then(|c| c.get("name"))
            .and_then(Value::as_str)
            && self.origin() == "stdio"
        {
            let name = jsonrpc::shorten(&crate::text::escape_controls(name), 64);
            self.set_origin(format!("stdio {name}"));
        }
        tracing::info!(requested = %jsonrpc::shorten(requested, 40), negotiated = version, "initialize");
        let result = InitializeResult::new(Self::capabilities())
            .with_protocol_version(protocol_version(version))
            .with_server_info(Self::server_info())
            .with_instructions(INSTRUCTIONS);
        let mut value = serde_json::to_value(result).map_err(|e| internal_error(e.to_string()))?;
        if let Some(obj) = value.as_object_mut() {
            obj.remove("resultType");
            obj.remove("_meta");
        }
        // As the store has the actor now; a refused key shows as the identity
        // it was (its calls are refused anyway).
        let actor = self
            .actor_now()
            .await
            .unwrap_or_else(|_| self.actor.identity().clone());
        value["_meta"] = json!({ ACTOR_META: actor });
        Ok(value)
    }

    fn discover(&self) -> Value {
        let versions = era::supported().into_iter().map(protocol_version).collect();
        let mut result = DiscoverResult::new(versions, Self::capabilities());
        result.instructions = Some(INSTRUCTIONS.to_string());
        serde_json::to_value(result).expect("discover result serialises")
    }

    /// The whole manifest in one page (it is short), so no cursor is ever
    /// issued and any cursor sent back is invalid, as the pagination rules say.
    async fn list_tools(&self, params: Option<&Map<String, Value>>) -> RpcResult {
        if let Some(cursor) = params
            .and_then(|p| p.get("cursor"))
            .filter(|c| !c.is_null())
        {
            return Err(invalid_params(format!(
                "Invalid params: unknown cursor {}; tools/list returns every tool in one page",
                jsonrpc::shorten(&cursor.to_string(), 40)
            )));
        }
        let tools = match self.actor_now().await {
            Ok(actor) => manifest::visible(&actor)
                .into_iter()
                .map(|t| t.to_tool())
                .collect(),
            Err(e) if is_actor_refusal(&e) => Vec::new(),
            Err(e) => {
                let e = e.for_client();
                return Err(internal_error(format!("{}: {}", e.code, e.message)));
            }
        };
        let mut result = ListToolsResult::with_all_items(tools);
        result.next_cursor = None;
        serde_json::to_value(result).map_err(|e| internal_error(e.to_string()))
    }

    async fn call_tool(&self, params: Option<&Map<String, Value>>, served: &Served) -> RpcResult {
        let params =
            params.ok_or_else(|| invalid_params("Invalid params: tools/call needs params"))?;
        let name = params
            .get("name")
            .and_then(Value::as_str)
            .ok_or_else(|| invalid_params("Invalid params: tools/call needs a string \"name\""))?;
        let empty = Value::Object(Map::new());
        let args = match params.get("arguments") {
            None | Some(Value::Null) => &empty,
            Some(a @ Value::Object(_)) => a,
            Some(_) => {
                return Err(invalid_params(
                    "Invalid params: \"arguments\" must be an object",
                ));
            }
        };
        // A known tool's call has its entry from here, before anything is
        // awaited, however it ends (see call_record): cancelled while the
        // actor was re-read, calls had left no entry. Who it is comes from
        // the identity, which a re-read never changes.
        let identity = self.actor.identity();
        let label = identity.label();
        let spec = manifest::find(name);
        let record = spec.map(|spec| {
            CallAudit::new(&self.site, &label, spec.name, args, self.late.clone())
                .from(self.origin(), identity.grant())
        });
        let actor = self.actor_now().await;
        let (Some(spec), Some(mut record)) = (spec, record) else {
            // Counted against the key's rate like every call (a flood of
            // made-up names had been answered and audited without limit).
            let limited = actor
                .as_ref()
                .ok()
                .and_then(|a| super::reach::count_call(a).err());
            if let Err(e) = tools::record(
                &self.site,
                &label,
                "<unknown>",
                &tools::args_digest(args),
                ("unknown_tool", limited.as_ref().map(|e| e.code)),
                (&self.origin(), actor.as_ref().ok().and_then(Actor::grant)),
            )
            .await
            {
                tracing::error!(code = %e.code, "could not record a call of an unknown tool");
            }
            if let Some(e) = limited {
                return Ok(tools::result_value(tools::Outcome::err(&e).result));
            }
            return Err(invalid_params(format!(
                "Unknown tool: {}",
                jsonrpc::shorten(name, 64)
            )));
        };
        // A call the approval policy holds waits here, before its bound starts.
        let approval = match &actor {
            Ok(actor) => {
                let progress = params.get("_meta").and_then(|m| m.get("progressToken"));
                let modern = served.modern.then(|| super::hold::Ask {
                    client: modern_client_asks(params),
                    request_state: params.get("requestState").filter(|v| !v.is_null()),
                    input_responses: params.get("inputResponses"),
                });
                let args = (args, record.args_sha256());
                super::hold::gate(self, actor, spec, args, progress, modern).await
            }
            Err(_) => Ok(super::hold::Pass::Run),
        };
        let held = matches!(approval, Ok(super::hold::Pass::Approved { .. }));
        // Asked of the client's user (2026-07-28): the call ends for now and
        // gets its entry when the answer brings it back (the ask is audited).
        let approval = match approval {
            Ok(super::hold::Pass::AskClient(result)) => {
                record.deferred();
                return Ok(result);
            }
            // The server stopped while the call was held: answered, never run.
            Ok(super::hold::Pass::Stopped(e)) => {
                record.interrupted(e.code).await;
                return Err(stopping(&e));
            }
            Ok(super::hold::Pass::Run) => Ok((tools::Rate::Take, None)),
            Ok(super::hold::Pass::Approved { base }) => Ok((tools::Rate::Taken, Some(base))),
            Ok(super::hold::Pass::RunIfUnchanged { base }) => Ok((tools::Rate::Take, Some(base))),
            Err(e) => Err(e),
        };
        // A held call runs as its actor is when the yes comes: a key revoked,
        // narrowed or moved off the client's network (a user's roles
        // lowered) while the call waited does not run it as it arrived.
        let actor = match actor {
            Ok(_) if held => self.actor_now().await,
            actor => actor,
        };
        record.bound_from_now();
        let work = async {
            match (&actor, approval) {
                (Ok(actor), Ok((rate, None))) => {
                    tools::call(&self.site, actor, spec, args, rate).await
                }
                // What was approved is checked again where the write happens.
                (Ok(actor), Ok((rate, Some(base)))) => {
                    let call = tools::call(&self.site, actor, spec, args, rate);
                    crate::site::content::APPROVED_BASE.scope(base, call).await
                }
                (Err(e), _) => tools::Outcome::err(e),
                (_, Err(e)) => tools::Outcome::err(&e),
            }
        };
        let bounded = tokio::time::timeout_at(record.deadline(), work);
        let finished = tokio::select! {
            finished = bounded => finished,
            // Past the server's drain bound: the call ends now, with an answer.
            () = self.late.cut_short() => {
                let e = cut_by_the_stop(spec);
                record.interrupted(e.code).await;
                return Err(stopping(&e));
            }
        };
        let outcome = match finished {
            Ok(outcome) => outcome,
            Err(_) => tools::Outcome::err(
                &Error::new(
                    codes::CALL_TIMEOUT,
                    format!("{} did not finish in time", spec.name),
                )
                .hint(
                    "the site's database or the tool's target is slow or unreachable; retry later",
                ),
            ),
        };
        let verdict = if outcome.code.is_some() {
            "error"
        } else {
            "ok"
        };
        tracing::debug!(tool = spec.name, outcome = verdict, code = outcome.code.map(crate::error::Code::as_str), era = %served.version, "tools/call");
        // A server that stops while this waits for the database drops the
        // call and answers it itself (`abandoned`); the entry stays queued.
        let result = match record.finish(outcome.code).await {
            Ok(()) => outcome.result,
            // A write that ran: its change is committed with its own entry,
            // and only the call's entry is missing. Told "withheld, retry",
            // a client had made the change twice.
            Err(e) if outcome.code.is_none() && !spec.read_only() => {
                tools::Outcome::err(&ran_unrecorded(e)).result
            }
            Err(e) => tools::Outcome::err(&e).result,
        };
        Ok(tools::result_value(result))
    }

    /// `subscriptions/listen`: acknowledge, then hold the request open until the
    /// client cancels it (no response then) or the server closes (a final result).
    async fn listen(
        self: &Arc<Self>,
        id: &Value,
        params: Option<&Map<String, Value>>,
        served: &Served,
    ) -> Result<Option<Value>, jsonrpc::ErrorData> {
        let wanted = params
            .and_then(|p| p.get("notifications"))
            .and_then(|n| n.get("toolsListChanged"))
            .and_then(Value::as_bool)
            .unwrap_or(false);
        let accepted = if wanted {
            json!({"toolsListChanged": true})
        } else {
            json!({})
        };
        let key = id.to_string();
        let _guard = if wanted {
            self.subscriptions
                .lock()
                .expect("lock")
                .insert(key.clone(), id.clone());
            Some(Unsubscribe {
                state: self.clone(),
                key,
            })
        } else {
            None
        };
        self.send(jsonrpc::notification(
            "notifications/subscriptions/acknowledged",
            Some(json!({"_meta": {era::META_SUBSCRIPTION_ID: id}, "notifications": accepted})),
        ))
        .await;
        // Open until the server closes, or the actor is refused: a revoked
        // credential's stream had stayed open, holding its slot, for good.
        let mut closing = self.closing.clone();
        let mut refused = self.refused.subscribe();
        tokio::select! {
            _ = closing.wait_for(|c| *c) => {}
            why = refused.wait_for(Option::is_some) => {
                let why = why.ok().and_then(|w| w.clone());
                if let Some(e) = why {
                    return Err(client_error(jsonrpc::ErrorCode::INVALID_REQUEST, &e));
                }
            }
        }
        let mut result = finish(served, json!({}), false);
        result["_meta"][era::META_SUBSCRIPTION_ID] = id.clone();
        Ok(Some(result))
    }
}

/// The error of a write that ran, whose call entry then could not be
/// written or confirmed: said to have acted, so it is not made again.
fn ran_unrecorded(e: Error) -> Error {
    let mut detail = e.detail.clone().unwrap_or_else(|| json!({}));
    detail["ran"] = json!(true);
    Error {
        message: format!(
            "the call ran and its change is committed (audited as the change itself); {}",
            e.message
        ),
        hint: Some(
            "do not call it again: read what it changed first; only the call's own entry is missing"
                .into(),
        ),
        detail: Some(detail),
        ..e
    }
}

/// The answer for a call still running when the server stopped waiting for
/// it: whether it may have acted follows from its tool, as for a call whose
/// connection died (a read failed; anything else may have written).
fn cut_by_the_stop(spec: &manifest::ToolSpec) -> Error {
    let (outcome, what, hint) = if spec.read_only() {
        (
            "failed",
            "nothing was changed",
            "call again once the server is back, or on another instance",
        )
    } else {
        (
            "outcome_unknown",
            "it may or may not have acted",
            "check what the call would have changed before calling again",
        )
    };
    Error::new(
        codes::SERVER_EXITED,
        format!(
            "the server is shutting down: {} was cut short before it finished; {what}",
            spec.name
        ),
    )
    .hint(hint)
    .detail(json!({"reason": "server_stopping", "outcome": outcome}))
}

/// The answer for a request the stopping server dropped before it could
/// answer (a call whose entry waited for a locked database past every
/// bound): answered by the server loop, which cannot tell what it had done.
pub(crate) fn abandoned() -> jsonrpc::ErrorData {
    stopping(
        &Error::new(
            codes::SERVER_EXITED,
            "the server is shutting down: the request was cut short before it was answered; it may or may not have acted",
        )
        .hint("check what the call would have changed before calling again")
        .detail(json!({"reason": "server_stopping", "outcome": "outcome_unknown"})),
    )
}

/// A call cut short by the server stopping is answered with a JSON-RPC error,
/// not a tool result: it is no outcome of the tool the model could correct.
/// The server error code (`-32000`, as for "busy": try again later), with
/// Gatehouse's code, hint and detail as its data.
fn stopping(e: &Error) -> jsonrpc::ErrorData {
    client_error(super::budget::BUSY, e)
}

/// `e` as a JSON-RPC error with `code`, its message, and Gatehouse's code,
/// hint and detail as its data, as a client may see them
/// ([`Error::for_client`]: no database location).
pub(crate) fn client_error(code: jsonrpc::ErrorCode, e: &Error) -> jsonrpc::ErrorData {
    let e = e.for_client();
    let data = serde_json::to_value(e.body()).expect("an error body serialises");
    jsonrpc::ErrorData::new(code, e.message, Some(data))
}

/// Removes a subscription when its request ends, however it ends.
struct Unsubscribe {
    state: Arc<State>,
    key: String,
}

impl Drop for Unsubscribe {
    fn drop(&mut self) {
        if let Ok(mut subs) = self.state.subscriptions.lock() {
            subs.remove(&self.key);
        }
    }
}

/// The client's name when its `initialize` declared form elicitation under
/// a revision that has it (an empty `elicitation` object meant form before
/// 2025-11-25 added modes).
fn client_asks(params: Option<&Map<String, Value>>, version: &str) -> Option<String> {
    if matches!(version, "2024-11-05" | "2025-03-26") {
        return None;
    }
    let params = params?;
    let elicitation = params
        .get("capabilities")?
        .get("elicitation")?
        .as_object()?;
    if !(elicitation.is_empty() || elicitation.contains_key("form")) {
        return None;
    }
    let name = params
        .get("clientInfo")
        .and_then(|c| c.get("name"))
        .and_then(Value::as_str)
        .unwrap_or("unnamed client");
    Some(jsonrpc::shorten(&crate::text::escape_controls(name), 64))
}

/// The client's name when a 2026-07-28 request's own capabilities declare
/// form elicitation (answered through `input_required`).
fn modern_client_asks(params: &Map<String, Value>) -> Option<String> {
    let meta = params.get("_meta")?;
    let elicitation = meta
        .get(era::META_CLIENT_CAPABILITIES)?
        .get("elicitation")?
        .as_object()?;
    if !(elicitation.is_empty() || elicitation.contains_key("form")) {
        return None;
    }
    let name = meta
        .get(era::META_CLIENT_INFO)
        .and_then(|c| c.get("name"))
        .and_then(Value::as_str)
        .unwrap_or("unnamed client");
    Some(jsonrpc::shorten(&crate::text::escape_controls(name), 64))
}

fn protocol_version(v: &str) -> ProtocolVersion {
    serde_json::from_value(json!(v)).expect("a version string is a ProtocolVersion")
}

fn is_actor_refusal(e: &Error) -> bool {
    matches!(
        e.code,
        codes::ACTOR_API_KEY_INVALID
            | codes::ACTOR_EMAIL_UNKNOWN
            | codes::USER_DISABLED
            | codes::OAUTH_TOKEN_INVALID
            | codes::KEY_NETWORK_NOT_ALLOWED
    )
}

/// Shapes a result for the version it is served under: 2026-07-28 results
/// carry `resultType`, the server's identity in `_meta` and, when cacheable,
/// caching hints (`private`, never fresh: the manifest follows the actor's
/// roles); handshake revisions get the shape they knew.
fn finish(served: &Served, mut result: Value, cacheable: bool) -> Value {
    let Some(obj) = result.as_object_mut() else {
        return result;
    };
    if served.modern {
        // An `input_required` answer keeps its type; every other is complete.
        if obj.get("resultType") != Some(&json!("input_required")) {
            obj.insert("resultType".into(), json!("complete"));
        }
        let meta = obj.entry("_meta").or_insert_with(|| json!({}));
        meta[era::META_SERVER_INFO] = json!(State::server_info());
        if cacheable {
            obj.insert("ttlMs".into(), json!(0));
            obj.insert("cacheScope".into(), json!("private"));
        }
    } else {
        obj.remove("resultType");
        obj.remove("ttlMs");
        obj.remove("cacheScope");
    }
    result
}

#[cfg(test)]
mod ran_unrecorded_tests {
    use super::*;

    /// A write whose change is committed but whose call entry could not be
    /// confirmed says it ran, so the client does not make the change again.
    #[test]
    fn a_write_that_ran_says_so_when_its_entry_is_missing() {
        let e = Error::new(codes::DATABASE_LOCKED, "locked; withheld")
            .detail(json!({"audit": "unconfirmed"}));
        let e = ran_unrecorded(e);
        assert_eq!(e.code, codes::DATABASE_LOCKED);
        assert!(
            e.message
                .starts_with("the call ran and its change is committed"),
            "{}",
            e.message
        );
        assert_eq!(
            e.detail.unwrap(),
            json!({"audit": "unconfirmed", "ran": true})
        );
        assert!(e.hint.unwrap().starts_with("do not call it again"));
    }
}

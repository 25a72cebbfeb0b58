//! The approval step of the one call path, shared by stdio and HTTP: a call
//! the policy holds ([`crate::access::approvals`]) waits here for a yes
//! before it runs, and is refused with its own code otherwise.
//!
//! Who is asked: the client's user, when the policy lets the client decide
//! and the client declared form elicitation: under a handshake revision with
//! `elicitation/create`, sent mid-call on the session's own channel; under
//! 2026-07-28 (stateless) by answering `input_required` with the question and
//! the hold's id as `requestState`, which the client's retry carries back
//! with its user's answer ([`Ask`]). Otherwise the site owner's queue,
//! polled here while `gatehouse approvals approve|deny` (or the desktop app)
//! decides from another process, with progress notifications to the client
//! when it sent a progress token. The hold is renewed while it waits; a call
//! cut short leaves its hold `abandoned` (see [`Guard`]), and a server that
//! stops ends its holds `abandoned` itself before it answers their callers
//! ([`Pass::Stopped`]).
//!
//! What runs is what was shown: the decision covers the arguments' digest and,
//! for content, the entry as it was when held; a changed entry (checked in
//! the write's own transaction) refuses the call (`APPROVAL_STALE`) instead of
//! running something no one saw.

use std::time::Duration;

use serde_json::{Map, Value, json};
use sha2::{Digest, Sha256};

use super::call_record::Late;
use super::handler::State;
use super::manifest::ToolSpec;
use super::tools;
use crate::access::actor::Actor;
use crate::access::approvals::{self, Decide, HeldCall, NewHold, Status};
use crate::error::{Code, Error, Result};
use crate::redact;
use crate::site::Site;
use crate::site::content;
use crate::time::now_ms;

/// How often the owner's queue is read while a call waits.
const POLL: Duration = Duration::from_millis(250);
/// Longest argument text shown to a decider.
const SHOWN_TEXT: usize = 4_000;

/// What a 2026-07-28 (stateless) request brings to the approval step.
pub struct Ask<'a> {
    /// The client's name when its per-request capabilities declare form
    /// elicitation, so it can be answered with `input_required`.
    pub client: Option<String>,
    /// `requestState` of a retried call: the id of the hold it answers.
    pub request_state: Option<&'a Value>,
    /// `inputResponses` of a retried call.
    pub input_responses: Option<&'a Value>,
}

/// The key of the one input request Gatehouse sends.
const INPUT_KEY: &str = "approval";

/// How the approval step lets a call on.
#[derive(Debug)]
pub enum Pass {
    /// The call runs now.
    Run,
    /// The call runs now, approved: `base` is the digest of the entry the
    /// approval was shown, which the write checks again in its own
    /// transaction ([`content::APPROVED_BASE`]). The hold (or the request
    /// that asked the client's user) took the call from the key's rate.
    Approved { base: String },
    /// The call runs now, unheld, on condition that the entry is still the
    /// one of digest `base` when the write comes (as an approved call's).
    RunIfUnchanged { base: String },
    /// The call ends for now with this `input_required` result; the client
    /// asks its user and calls again with the answer.
    AskClient(Value),
    /// The server is stopping: the hold was ended `abandoned` and the call
    /// ends with this error, nothing run.
    Stopped(Error),
}

/// Holds `spec`'s call when the policy says so and returns once it may run;
/// `Err` is the refusal the call ends with. Calls the policy does not hold
/// (and calls that would be refused anyway) pass at once. `modern` is the
/// request's own say under 2026-07-28 (`None` under a handshake revision).
/// `args_sha256` is the arguments' digest the call's audit record already took.
pub async fn gate(
    state: &State,
    actor: &Actor,
    spec: &'static ToolSpec,
    (args, args_sha256): (&Value, &str),
    progress: Option<&Value>,
    modern: Option<Ask<'_>>,
) -> Result<Pass> {
    let site = state.site();
    // Every call passes here: borrow the policy, allocate nothing until a hold.
    let none = approvals::ApprovalPolicy::default();
    let policy = site.file.approvals()?.unwrap_or(&none);
    if !policy.holds(actor, spec.name, spec.effect.into()) {
        if !holds_renames(policy, actor, spec, args) {
            return Ok(Pass::Run);
        }
        // A rename of a draft runs unheld, on condition that the entry is
        // still the draft read here when the write comes (published
        // meanwhile, it is refused: renaming it would need the approval).
        let (published, base) = moves_live(site, args).await?;
        if !published {
            return Ok(Pass::RunIfUnchanged { base });
        }
    }
    // A call its checks refuse is refused as usual, never held first.
    if tools::admissible(actor, spec, args).is_err() {
        return Ok(Pass::Run);
    }
    // Boxed: the hold's state is most of a call's future, which every call
    // would otherwise carry (and copy as its task is spawned and finished).
    Box::pin(hold(
        state,
        actor,
        spec,
        (args, args_sha256),
        progress,
        modern,
        policy,
    ))
    .await
}

/// How long `spec`'s call may wait for a decision before it runs: the
/// policy's timeout when it may hold the call (any rename counted, published
/// or not: nothing is read here), else nothing. The HTTP adapter adds it to
/// the request's deadline.
pub fn longest_wait(site: &Site, actor: &Actor, spec: &ToolSpec, args: &Value) -> Duration {
    let none = approvals::ApprovalPolicy::default();
    let policy = site.file.approvals().ok().flatten().unwrap_or(&none);
    let may_hold = policy.holds(actor, spec.name, spec.effect.into())
        || holds_renames(policy, actor, spec, args);
    // A call its checks refuse is never held (see `gate`): no longer deadline.
    if may_hold && tools::admissible(actor, spec, args).is_ok() {
        Duration::from_secs(policy.timeout_seconds)
    } else {
        Duration::ZERO
    }
}

/// Whether `spec`'s call is a draft write that renames (`new_slug` other
/// than `slug`) under a policy that holds publishing: renaming a published
/// entry changes its live address, which needs the publish permission, so it
/// waits as a publish does (by the effect or by `content_publish`'s name),
/// though its own effect class says write.
fn holds_renames(
    policy: &approvals::ApprovalPolicy,
    actor: &Actor,
    spec: &ToolSpec,
    args: &Value,
) -> bool {
    let slug = args.get("slug").and_then(Value::as_str);
    let new_slug = args.get("new_slug").and_then(Value::as_str);
    spec.name == "content_write_draft"
        && new_slug.is_some_and(|n| Some(n) != slug)
        && policy.holds(actor, "content_publish", "publish")
}

/// Whether the entry a draft write names is published (see [`holds_renames`]),
/// and the digest of the entry as read.
async fn moves_live(site: &Site, args: &Value) -> Result<(bool, String)> {
    let base = Base::read(site, "content_write_draft", args).await?;
    let published = base
        .entry
        .as_ref()
        .is_some_and(|(e, _)| e.status == "published");
    Ok((published, base.digest))
}

/// [`gate`] for a call the policy holds.
async fn hold(
    state: &State,
    actor: &Actor,
    spec: &'static ToolSpec,
    (args, args_sha256): (&Value, &str),
    progress: Option<&Value>,
    modern: Option<Ask<'_>>,
    policy: &approvals::ApprovalPolicy,
) -> Result<Pass> {
    let site = state.site();
    // A retried 2026-07-28 call brings its user's answer to the hold it names.
    if let Some(ask) = &modern
        && let Some(request_state) = ask.request_state
    {
        // The hold it answers counted the call; one that answers no hold
        // (made up, another's, decided) is a call of its own against the
        // key's rate, or a flood of them went unlimited.
        return match answered(site, actor, spec, args_sha256, request_state, ask).await {
            Ok(base) => Ok(Pass::Approved { base }),
            Err(e) => {
                super::reach::count_call(actor)?;
                Err(e)
            }
        };
    }
    let base = Base::read(site, spec.name, args).await?;
    // Outside the caller's content scope (the entry, or the slug a rename
    // moves it to): refused by the write as usual, never held (the question
    // would name an entry the caller cannot see, or a move refused after the yes).
    let slug = args.get("slug").and_then(Value::as_str);
    let outside = slug.is_some_and(|slug| {
        !content::scope_admits(actor, slug, base.entry.as_ref().map(|(e, _)| e))
            || args
                .get("new_slug")
                .and_then(Value::as_str)
                .is_some_and(|new| content::check_rename(actor, slug, new).is_err())
    });
    if spec.name.starts_with("content_") && outside {
        return Ok(Pass::Run);
    }
    // A hold counts against the key's rate as the call would: a key of one
    // call a minute otherwise filled the owner's queue at the speed it sent.
    super::reach::count_call(actor)?;
    let detached = modern.is_some();
    let client = match &modern {
        Some(ask) => ask.client.clone(),
        None => state.client_asks(),
    };
    // A rename held as a publish is decided as a publish would be.
    let wanted = if policy.holds(actor, spec.name, spec.effect.into()) {
        policy.decider(actor, spec.name, spec.effect.into())
    } else {
        policy.decider(actor, "content_publish", "publish")
    };
    let decider = match (wanted, &client) {
        (Decide::Client, Some(_)) => Decide::Client,
        _ => Decide::Owner,
    };
    let detached = detached && decider == Decide::Client;
    let label = actor.label();
    let held = approvals::hold(
        &site.store,
        NewHold {
            actor: &label,
            tool: spec.name,
            summary: base.summary(spec.name, args),
            arguments: shown_arguments(args),
            args_sha256: args_sha256.to_string(),
            diff: base.diff(spec.name, args),
            base_sha256: Some(base.digest.clone()),
            decider,
            timeout_ms: i64::try_from(policy.timeout_seconds)
                .unwrap_or(86_400)
                .saturating_mul(1000),
            via: json!({"client": client}),
            detached,
        },
    )
    .await?;
    tracing::info!(hold = %held.id, tool = spec.name, decider = %decider, "holding a call for approval");
    if detached {
        return Ok(Pass::AskClient(input_required(&held)));
    }
    let late = state.late_records();
    let guard = Guard::new(site, &held, late.clone());
    // The question sent to the client's user, while it waits for an answer.
    let asked = std::sync::Mutex::new(None);
    let waited = async {
        match decider {
            Decide::Client => ask_client(state, &held, &label, client.as_deref(), &asked).await,
            Decide::Owner => wait_for_owner(state, &held, progress).await,
        }
    };
    let mut waited = std::pin::pin!(waited);
    let approved = tokio::select! {
        approved = &mut waited => approved,
        () = late.cut_short() => {
            // The question is withdrawn (the wait, kept until here, has not
            // forgotten it yet), so the client's user is not left asked.
            let question = crate::sync::lock(&asked).take();
            if let Some(id) = question {
                state.cancel_client_request(&id, "the server is shutting down").await;
            }
            let decided_first = !guard.abandon(SERVER_STOPPING).await;
            return Ok(Pass::Stopped(stopped_while_held(&held, decided_first)));
        }
    };
    let outcome = match approved {
        Ok(()) => verify(site, spec.name, args_sha256, &held).await,
        Err(e) => Err(e),
    };
    guard.disarm();
    outcome.map(|base| Pass::Approved { base })
}

/// The question asked of the client's user, as `elicitation/create`'s params.
fn question(held: &HeldCall) -> Value {
    json!({
        "mode": "form",
        "message": format!("{}\n\nGatehouse holds this call until you answer (id {}).", held.summary, held.id),
        "requestedSchema": {"type": "object", "properties": {}},
    })
}

/// The 2026-07-28 answer that asks the client's user: the question as an
/// embedded `elicitation/create`, and the hold's id as the state to send back.
fn input_required(held: &HeldCall) -> Value {
    json!({
        "resultType": "input_required",
        "inputRequests": {INPUT_KEY: {"method": "elicitation/create", "params": question(held)}},
        "requestState": held.id,
    })
}

/// A retried 2026-07-28 call with its user's answer: the hold it names must be
/// this caller's, for this very call, still waiting and within its timeout;
/// then the answer ends it (approved or declined) and an approved call is
/// verified as any other. A state naming anything else is refused as unknown
/// (another caller's holds are not revealed); a replayed answer approves
/// nothing twice.
async fn answered(
    site: &Site,
    actor: &Actor,
    spec: &'static ToolSpec,
    args_sha256: &str,
    request_state: &Value,
    ask: &Ask<'_>,
) -> Result<String> {
    let store = &site.store;
    let label = actor.label();
    let unknown = || {
        Error::new(
            Code::APPROVAL_NOT_FOUND,
            "the call's requestState names no question asked of this caller",
        )
        .hint("nothing was run; call again without requestState to be asked")
    };
    let id = request_state.as_str().ok_or_else(unknown)?;
    let held = match approvals::get(store, id).await {
        Ok(h)
            if h.actor == label
                && h.decider == Decide::Client
                && h.holder == approvals::DETACHED_HOLDER =>
        {
            h
        }
        Ok(_) | Err(_) => return Err(unknown()),
    };
    if held.tool != spec.name || held.args_sha256 != args_sha256 {
        return Err(Error::new(
            Code::APPROVAL_STALE,
            format!(
                "the answered question was about another call than this {}",
                spec.name
            ),
        )
        .hint("nothing was run; call again without requestState to be asked about this call"));
    }
    if held.status != Status::Waiting {
        return Err(Error::new(
            Code::APPROVAL_ALREADY_DECIDED,
            format!("held call {} was {} already", held.id, held.status),
        )
        .hint("an answer counts once; call again without requestState to be asked again"));
    }
    let via = json!({"via": "input_required", "client": ask.client});
    if now_ms() >= held.expires_at {
        if approvals::conclude(store, &held, Status::TimedOut, approvals::SERVER_ACTOR, via).await?
        {
            return Err(timed_out(&held));
        }
        return Err(ended_elsewhere(&approvals::get(store, &held.id).await?));
    }
    let action = ask
        .input_responses
        .and_then(|r| r.get(INPUT_KEY))
        .and_then(|r| r.get("action"))
        .and_then(Value::as_str);
    let (status, refusal) = match action {
        Some("accept") => (Status::Approved, None),
        other => (
            Status::Declined,
            Some(declined_by_user(&held, other.unwrap_or("nothing"))),
        ),
    };
    let by = format!("{label} (client's user)");
    if !approvals::conclude(store, &held, status, &by, via).await? {
        return Err(ended_elsewhere(&approvals::get(store, &held.id).await?));
    }
    if let Some(refusal) = refusal {
        return Err(refusal);
    }
    verify(site, spec.name, args_sha256, &held).await
}

/// The entry a content call acts on, as it is now: all of it, pending
/// revision included, whatever the caller may read. A key that may publish
/// but not read drafts publishes the pending revision all the same, so the
/// diff and the digest that refuses a changed entry cover what would run,
/// not the caller's view of it (which had shown an empty diff and let a
/// revision swapped after the approval go live).
struct Base {
    entry: Option<(content::ContentEntry, Option<content::PendingRevision>)>,
    digest: String,
}

impl Base {
    async fn read(site: &Site, tool: &str, args: &Value) -> Result<Base> {
        let slug = args.get("slug").and_then(Value::as_str);
        let entry = match (tool.starts_with("content_"), slug) {
            (true, Some(slug)) => crate::store::content::by_slug(&site.store, slug).await?,
            _ => None,
        };
        let digest = content::base_digest(entry.as_ref().map(|(e, p)| (e, p.as_ref())));
        Ok(Base { entry, digest })
    }

    fn title(&self, args: &Value) -> String {
        let t = self
            .entry
            .as_ref()
            .map(|(e, p)| p.as_ref().map_or(e.title.as_str(), |p| p.title.as_str()))
            .or_else(|| args.get("title").and_then(Value::as_str))
            .or_else(|| args.get("slug").and_then(Value::as_str))
            .unwrap_or("?");
        crate::text::escape_controls(&t.chars().take(120).collect::<String>()).into_owned()
    }

    /// One line a person can say yes or no to.
    fn summary(&self, tool: &str, args: &Value) -> String {
        let arg = |k: &str| {
            let v = args.get(k).and_then(Value::as_str).unwrap_or("?");
            crate::text::escape_controls(&v.chars().take(120).collect::<String>()).into_owned()
        };
        match tool {
            "content_publish" => format!("Publish '{}' to the live site?", self.title(args)),
            "content_write_draft" => match args.get("new_slug").and_then(Value::as_str) {
                Some(new) if Some(new) != args.get("slug").and_then(Value::as_str) => format!(
                    "Save a draft of '{}' and move it from {} to {}?",
                    arg("title"),
                    arg("slug"),
                    arg("new_slug")
                ),
                _ => format!("Save a draft of '{}' ({})?", arg("title"), arg("slug")),
            },
            "content_delete" => format!("Delete '{}' ({})?", self.title(args), arg("slug")),
            "media_write" => format!(
                "Upload the file {} ({})?",
                arg("filename"),
                arg("mime_type")
            ),
            "http_fetch" => format!(
                "Fetch {}?",
                shown_url(args.get("url").and_then(Value::as_str).unwrap_or("?"), 120)
            ),
            other => format!("Run {other}?"),
        }
    }

    /// The change, as a unified diff of title and body, against the entry now.
    fn diff(&self, tool: &str, args: &Value) -> Option<String> {
        let text = |title: &str, body: &str| format!("# {title}\n\n{body}\n");
        let (live, draft) = match &self.entry {
            Some((e, p)) => {
                let live = (e.status == "published").then(|| text(&e.title, &e.body));
                let draft = p
                    .as_ref()
                    .map_or_else(|| text(&e.title, &e.body), |p| text(&p.title, &p.body));
                (live, Some(draft))
            }
            None => (None, None),
        };
        let (old, new, labels) = match tool {
            "content_write_draft" => (
                draft.unwrap_or_default(),
                text(
                    args.get("title").and_then(Value::as_str).unwrap_or(""),
                    args.get("body").and_then(Value::as_str).unwrap_or(""),
                ),
                ("current draft", "proposed draft"),
            ),
            "content_publish" => (
                live.unwrap_or_default(),
                draft.unwrap_or_default(),
                ("live site", "after publishing"),
            ),
            "content_delete" => (
                draft.unwrap_or_default(),
                String::new(),
                ("current entry", "after deleting"),
            ),
            _ => return None,
        };
        Some(
            similar::TextDiff::from_lines(&old, &new)
                .unified_diff()
                .context_radius(3)
                .header(labels.0, labels.1)
                .to_string(),
        )
    }
}

/// A URL as a decider sees it: where it goes in full (scheme and host,
/// however long), then as much of the rest as fits in `max` characters,
/// with its whole length when cut; secrets hidden. Cut at a fixed length
/// (or replaced by its digest when long), a fetch's destination had been
/// hidden behind a long host name: what a decider of a fetch must see.
fn shown_url(url: &str, max: usize) -> String {
    let shown = redact::redact_urls(url);
    let host_end = shown.find("://").map_or(0, |at| {
        let rest = &shown[at + 3..];
        at + 3 + rest.find(['/', '?', '#']).unwrap_or(rest.len())
    });
    let keep = max.max(shown[..host_end].chars().count());
    let total = shown.chars().count();
    let cut = if total > keep {
        format!(
            "{}… ({total} characters in all)",
            shown.chars().take(keep).collect::<String>()
        )
    } else {
        shown
    };
    crate::text::escape_controls(&cut).into_owned()
}

/// The arguments as a decider sees them: keys and URLs' secrets hidden,
/// uploads and long text replaced by their size and digest, a URL shown
/// with its whole destination.
pub fn shown_arguments(args: &Value) -> Value {
    let shown = args
        .as_object()
        .into_iter()
        .flatten()
        .map(|(k, v)| {
            let v = match v {
                Value::String(s) if k == "url" => json!(shown_url(s, SHOWN_TEXT)),
                Value::String(s) if k == "data_base64" || s.len() > SHOWN_TEXT => json!(format!(
                    "<{} characters, sha256 {}>",
                    s.len(),
                    hex::encode(Sha256::digest(s.as_bytes()))
                )),
                Value::String(s) => json!(redact::redact_keys(&redact::redact_urls(s))),
                other => other.clone(),
            };
            (k.clone(), v)
        })
        .collect::<Map<_, _>>();
    Value::Object(shown)
}

/// Asks the client's user through `elicitation/create` and waits for the
/// answer until the hold's timeout, renewing the hold meanwhile; `asked`
/// gets the request's id (a stopping server withdraws the question).
async fn ask_client(
    state: &State,
    held: &HeldCall,
    caller: &str,
    client: Option<&str>,
    asked: &std::sync::Mutex<Option<Value>>,
) -> Result<()> {
    let store = &state.site().store;
    let params = question(held);
    let left = Duration::from_millis(u64::try_from(held.expires_at - now_ms()).unwrap_or(0));
    let (id, answer) = state.request_client("elicitation/create", params).await;
    *crate::sync::lock(asked) = Some(id.clone());
    // However this ends (a cancelled call drops it here), the request is forgotten.
    let _forget = Forget { state, id: &id };
    // The hold is renewed while the answer is awaited (renewing never ends by itself).
    let answer = tokio::select! {
        a = tokio::time::timeout(left, answer) => a.map(Result::ok),
        () = renew_until_done(store, &held.id) => Ok(None),
    };
    let by = format!("{caller} (client's user)");
    let via = json!({"via": "elicitation", "client": client});
    let (status, refusal) = match answer {
        Ok(Some(Ok(result))) => match result.get("action").and_then(Value::as_str) {
            Some("accept") => (Status::Approved, None),
            action => (
                Status::Declined,
                Some(declined_by_user(held, action.unwrap_or("without an action"))),
            ),
        },
        Ok(Some(Err(e))) => (
            Status::Declined,
            Some(
                Error::new(
                    Code::APPROVAL_DECLINED,
                    format!("the client could not ask its user: {}", jsonrpc_shorten(&e.message)),
                )
                .hint("nothing was run; a client without a way to ask gets the site owner's queue when the policy says decide = \"owner\""),
            ),
        ),
        // The session closed before the answer came: the call is not run.
        Ok(None) => (
            Status::Abandoned,
            Some(Error::new(
                Code::APPROVAL_DECLINED,
                "the client went away before answering",
            )),
        ),
        Err(_) => {
            state.cancel_client_request(&id, "no answer in time").await;
            (Status::TimedOut, Some(timed_out(held)))
        }
    };
    let by = if matches!(status, Status::TimedOut | Status::Abandoned) {
        approvals::SERVER_ACTOR.to_string()
    } else {
        by
    };
    if !approvals::conclude(store, held, status, &by, via).await? {
        // Ended by someone else first (its server was taken for gone).
        return Err(ended_elsewhere(&approvals::get(store, &held.id).await?));
    }
    refusal.map_or(Ok(()), Err)
}

fn jsonrpc_shorten(s: &str) -> String {
    crate::mcp::wire::jsonrpc::shorten(s, 200)
}

/// Forgets a request to the client when its asker is gone.
struct Forget<'a> {
    state: &'a State,
    id: &'a Value,
}

impl Drop for Forget<'_> {
    fn drop(&mut self) {
        self.state.forget_client_request(self.id);
    }
}

/// Renews the hold every heartbeat; never returns.
async fn renew_until_done(store: &crate::store::Store, id: &str) {
    let mut tick = tokio::time::interval(Duration::from_millis(
        u64::try_from(approvals::HEARTBEAT_MS).unwrap_or(1000),
    ));
    tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    loop {
        tick.tick().await;
        if let Err(e) = approvals::heartbeat(store, id).await {
            tracing::warn!(code = %e.code, "could not renew a held call");
        }
    }
}

/// Waits for the site owner's decision, renewing the hold and telling the
/// client how long it has waited.
async fn wait_for_owner(state: &State, held: &HeldCall, progress: Option<&Value>) -> Result<()> {
    let store = &state.site().store;
    let started = now_ms();
    let mut last_beat = started;
    let total = (held.expires_at - held.created_at) / 1000;
    let mut last_told = -1;
    loop {
        let now = now_ms();
        let current = approvals::get(store, &held.id).await?;
        match current.status {
            Status::Approved if approvals::take(store, &held.id).await? => return Ok(()),
            // Recorded as not run by a sweep while this server was quiet.
            Status::Approved => return Err(ended_elsewhere(&current)),
            Status::Waiting if now >= held.expires_at => {
                if approvals::conclude(
                    store,
                    held,
                    Status::TimedOut,
                    approvals::SERVER_ACTOR,
                    json!({"via": "queue"}),
                )
                .await?
                {
                    return Err(timed_out(held));
                }
                continue; // decided in the meantime: read it again
            }
            Status::Waiting => {}
            _ => return Err(ended_elsewhere(&current)),
        }
        if now - last_beat >= approvals::HEARTBEAT_MS {
            approvals::heartbeat(store, &held.id).await?;
            last_beat = now;
        }
        let waited = (now - started) / 1000;
        if let Some(token) = progress
            && waited != last_told
        {
            last_told = waited;
            state
                .send(crate::mcp::wire::jsonrpc::notification(
                    "notifications/progress",
                    Some(json!({
                        "progressToken": token,
                        "progress": waited,
                        "total": total,
                        "message": format!("waiting for the site owner's approval: gatehouse approvals approve {}", held.id),
                    })),
                ))
                .await;
        }
        tokio::time::sleep(POLL).await;
    }
}

/// The refusal for a call the client's own user declined, by either way of asking.
fn declined_by_user(held: &HeldCall, answered: &str) -> Error {
    Error::new(
        Code::APPROVAL_DECLINED,
        format!("{} was declined by the client's user", held.tool),
    )
    .hint(format!("the user answered {answered}; nothing was run"))
}

fn timed_out(held: &HeldCall) -> Error {
    Error::new(
        Code::APPROVAL_TIMEOUT,
        format!("nobody approved {} in time", held.tool),
    )
    .hint(format!(
        "held call {} was refused after {} s; nothing was run",
        held.id,
        (held.expires_at - held.created_at) / 1000
    ))
}

/// The answer for a call whose server stopped while it was held; a decision
/// that ended the hold in the same instant changes nothing but the wording.
fn stopped_while_held(held: &HeldCall, decided_first: bool) -> Error {
    let how = if decided_first {
        "was decided as the server stopped, too late to run"
    } else {
        "was abandoned before anyone approved it"
    };
    Error::new(
        Code::APPROVAL_HOLDER_GONE,
        format!(
            "the server is shutting down: held call {} ({}) {how}; nothing was run",
            held.id, held.tool
        ),
    )
    .hint("call again once the server is back, or on another instance: the call is held and asked again")
    .detail(json!({"reason": "server_stopping", "hold": held.id, "ran": false}))
}

/// The refusal for a hold someone else ended.
fn ended_elsewhere(held: &HeldCall) -> Error {
    let who = held.decided_by.as_deref().unwrap_or("someone");
    match held.status {
        Status::Denied => Error::new(Code::APPROVAL_DENIED, format!("{who} denied {}", held.tool))
            .hint(format!("held call {}; nothing was run", held.id)),
        Status::Declined => Error::new(
            Code::APPROVAL_DECLINED,
            format!("{} was declined", held.tool),
        ),
        Status::TimedOut => timed_out(held),
        _ => Error::new(
            Code::APPROVAL_HOLDER_GONE,
            format!("held call {} was recorded as not run", held.id),
        )
        .hint("the hold was taken for abandoned; call again"),
    }
}

/// The approved call runs only with the arguments it was shown with; the
/// entry it was shown is its digest, returned for the write to check in its
/// own transaction (`content::APPROVED_BASE`), the one place a change made
/// after the approval cannot slip past.
async fn verify(site: &Site, tool: &str, args_sha256: &str, held: &HeldCall) -> Result<String> {
    let stored = approvals::get(&site.store, &held.id).await?;
    if stored.args_sha256 != args_sha256 {
        return Err(Error::new(
            Code::APPROVAL_STALE,
            format!("the approved arguments of {tool} differ from the call's"),
        )
        .hint("nothing was run; call again to be asked again"));
    }
    stored.base_sha256.ok_or_else(|| {
        Error::new(
            Code::APPROVAL_STALE,
            format!("the approval of {tool} recorded no entry to compare"),
        )
        .hint("nothing was run; call again to be asked again")
    })
}

/// How a hold ended by its stopping server says so (`found_by`).
const SERVER_STOPPING: &str = "server stopping";
/// How a hold ended by its call dropped (a client's cancel, a cut connection) says so.
const CALL_CUT_SHORT: &str = "call cut short";

/// Ends a hold as `abandoned` when its call is cut short while it waits
/// (cancelled, or the server stops): recorded as not run, never run later.
struct Guard {
    site: Site,
    held: Option<HeldCall>,
    late: Late,
    /// Why the hold ends, kept for `Drop`: an end that missed the grace is
    /// still recorded with the stop's reason, not a cut's.
    found_by: &'static str,
}

impl Guard {
    fn new(site: &Site, held: &HeldCall, late: Late) -> Guard {
        Guard {
            site: site.clone(),
            held: Some(held.clone()),
            late,
            found_by: CALL_CUT_SHORT,
        }
    }

    fn disarm(mut self) {
        self.held = None;
    }

    /// Ends the hold `abandoned` now, so the answer follows its end; when that
    /// cannot be written in time, the end is left to `Drop` (written while
    /// the server stops). `false` when a decision ended the hold first.
    async fn abandon(mut self, found_by: &'static str) -> bool {
        let Some(held) = self.held.clone() else {
            return true;
        };
        self.found_by = found_by;
        let ended = approvals::conclude(
            &self.site.store,
            &held,
            Status::Abandoned,
            approvals::SERVER_ACTOR,
            json!({"found_by": found_by}),
        );
        match tokio::time::timeout(ABANDON_GRACE, ended).await {
            // Ended now, or by someone else first: either way not ours to end again.
            Ok(Ok(won)) => {
                self.disarm();
                won
            }
            Ok(Err(e)) => {
                tracing::error!(code = %e.code, hold = %held.id, "could not record an abandoned hold; retrying");
                true
            }
            Err(_) => {
                tracing::warn!(hold = %held.id, "recording an abandoned hold after the answer");
                true
            }
        }
    }
}

/// How long a stopping server waits to end a hold before it answers anyway
/// (the end is written later with the same reason). With the call's own entry
/// (`ENTRY_GRACE`) it stays well inside `ANSWER_GRACE`, past which a call is
/// dropped unanswered.
const ABANDON_GRACE: Duration = Duration::from_secs(1);

impl Drop for Guard {
    fn drop(&mut self) {
        let Some(held) = self.held.take() else {
            return;
        };
        let Ok(rt) = tokio::runtime::Handle::try_current() else {
            return;
        };
        let site = self.site.clone();
        let found_by = self.found_by;
        self.late.push(rt.spawn(async move {
            let ended = approvals::conclude(
                &site.store,
                &held,
                Status::Abandoned,
                approvals::SERVER_ACTOR,
                json!({"found_by": found_by}),
            );
            if let Err(e) = ended.await {
                tracing::error!(code = %e.code, hold = %held.id, "could not record an abandoned hold");
            }
        }));
    }
}

#[cfg(test)]
mod tests {
    /// A fetch's destination is shown whole to whoever decides, however long
    /// its host; the rest is cut with its length said. A URL of 4,000 and
    /// more characters had been shown as its digest, and the summary cut at
    /// 120 characters, inside the host.
    #[test]
    fn a_held_fetch_shows_its_whole_destination() {
        let label = "a".repeat(63);
        let host = format!("www.{label}.{label}.{label}.attacker-exfil.example");
        let url = format!("https://{host}/collect?d={}", "SECRETDATA".repeat(383));
        assert!(url.len() > SHOWN_TEXT && url.len() <= 4_096);
        let base = Base {
            entry: None,
            digest: String::new(),
        };
        let summary = base.summary("http_fetch", &json!({"url": url}));
        assert!(
            summary.starts_with(&format!("Fetch https://{host}")),
            "{summary}"
        );
        assert!(
            summary.contains(&format!("({} characters in all)", url.len())),
            "{summary}"
        );
        let shown = shown_arguments(&json!({"url": url}));
        let shown = shown["url"].as_str().unwrap();
        assert!(
            shown.starts_with(&format!("https://{host}/collect?d=SECRETDATA")),
            "{shown}"
        );
        // A short one is shown as it is, a password in it hidden.
        let summary = base.summary("http_fetch", &json!({"url": "https://u:pw@api.example/x"}));
        assert_eq!(summary, "Fetch https://u:***@api.example/x?");
    }

    use super::*;
    use crate::access::approvals::Decide;

    /// A stopping server whose database is busy past the grace answers first
    /// and ends the hold afterwards: that late end still names the stop, not a
    /// cut, so the audit says why the call never ran.
    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn an_abandon_that_misses_its_grace_still_records_the_servers_stop() {
        let tmp = tempfile::tempdir().unwrap();
        let site = crate::site::init(&tmp.path().join("s"), Some("t"), false, None)
            .await
            .unwrap();
        let held = approvals::hold(
            &site.store,
            NewHold {
                actor: "key:k1",
                tool: "content_publish",
                summary: "Publish 'a'?".into(),
                arguments: json!({"slug": "a"}),
                args_sha256: "d".into(),
                diff: None,
                base_sha256: None,
                decider: Decide::Owner,
                timeout_ms: 60_000,
                via: json!({}),
                detached: false,
            },
        )
        .await
        .unwrap();
        // Another process holds the write lock longer than the grace.
        let db = site.dir.join(crate::site::DB_FILE);
        let (locked, is_locked) = std::sync::mpsc::channel();
        let blocker = std::thread::spawn(move || {
            let conn = rusqlite::Connection::open(db).unwrap();
            conn.execute_batch("BEGIN IMMEDIATE").unwrap();
            locked.send(()).unwrap();
            std::thread::sleep(ABANDON_GRACE + Duration::from_secs(1));
            conn.execute_batch("ROLLBACK").unwrap();
        });
        is_locked.recv().unwrap();
        let late = Late::default();
        let guard = Guard::new(&site, &held, late.clone());
        assert!(
            guard.abandon(SERVER_STOPPING).await,
            "no decision came first"
        );
        assert_eq!(
            approvals::get(&site.store, &held.id).await.unwrap().status,
            Status::Waiting,
            "the grace passed while the database was locked"
        );
        late.wait(Duration::from_secs(30)).await;
        blocker.join().unwrap();
        assert_eq!(
            approvals::get(&site.store, &held.id).await.unwrap().status,
            Status::Abandoned
        );
        let rows = crate::store::audit::latest(&site.store, 1).await.unwrap();
        let detail: Value = serde_json::from_str(&rows[0].detail).unwrap();
        assert_eq!(rows[0].action, "approval.abandoned", "{rows:?}");
        assert_eq!(detail["found_by"], SERVER_STOPPING, "{detail}");
    }
}

//! Commands for a connected server's tools on the Connections screen: the
//! tool list, its hold (a tool list change announced mid-session), a call
//! (cancellable by the token the page chose) with its result cut for the
//! view, the call records, and saving a full result or a stderr tail to a
//! file in the user's downloads folder.

use std::path::PathBuf;
use std::time::Instant;

use gatehouse_core::Error;
use gatehouse_core::ErrorBody;
use gatehouse_core::connections::registry::LiveConnection;
use gatehouse_core::connections::result_view::{self, ResultView};
use gatehouse_core::connections::saved;
use gatehouse_core::error::codes;
use gatehouse_core::mcp::client::{CallOptions, CallRecord, CallState, EffectClass};
use gatehouse_core::text;
use serde::Serialize;
use serde_json::Value;
use tauri::{AppHandle, Manager, State};

use crate::error::IpcResult;
use crate::live::check_id;
use crate::state::AppState;

/// Largest arguments object the page may send (bytes of JSON).
const MAX_ARGUMENTS_BYTES: usize = 1 << 20;

/// A tool as the page shows it and builds its call form from.
#[derive(Debug, Serialize, ts_rs::TS)]
pub struct ToolView {
    pub name: String,
    pub title: Option<String>,
    pub description: Option<String>,
    #[ts(type = "unknown")]
    pub input_schema: Value,
    #[ts(type = "unknown")]
    pub annotations: Value,
    /// From the tool's `readOnlyHint`.
    pub effect: EffectClass,
}

/// How a call from the page ended.
#[derive(Debug, Serialize, ts_rs::TS)]
pub struct CallView {
    pub call_id: String,
    pub state: CallState,
    /// The result cut for the view (the full one can be saved).
    pub view: Option<ResultView>,
    pub error: Option<ErrorBody>,
    pub duration_ms: u64,
}

/// One call record, newest first in lists.
#[derive(Debug, Serialize, ts_rs::TS)]
pub struct CallRecordView {
    pub call_id: String,
    pub tool: String,
    pub state: CallState,
    pub effect: Option<EffectClass>,
    pub duration_ms: Option<u64>,
    pub error: Option<ErrorBody>,
    /// RFC 3339.
    pub received_at: String,
}

/// One page of a connection's call records, newest first.
#[derive(Debug, Serialize, ts_rs::TS)]
pub struct CallRecordPage {
    pub records: Vec<CallRecordView>,
    /// Calls of every run of the connection, on all pages.
    pub total: u64,
    /// Where the next (older) page starts; `null` on the last page.
    pub next_offset: Option<u32>,
}

fn running(state: &AppState, name: &str) -> Result<LiveConnection, Error> {
    state
        .connections
        .get(name)
        .filter(|l| !l.conn.is_closed())
        .ok_or_else(|| {
            Error::invalid(
                codes::CONNECTION_NOT_OPEN,
                format!("connection {name} is not running in this window"),
                "press Connect first",
            )
        })
}

/// The arguments of the `list_tools` command, as the page sends them.
#[derive(serde::Deserialize, ts_rs::TS)]
#[serde(deny_unknown_fields)]
pub struct ListToolsArgs {
    pub name: String,
}

/// The tools connection `name` lists now, if they are the pinned ones
/// (`CONNECTION_TOOLS_CHANGED`, and the connection held, if not).
#[tauri::command(rename_all = "snake_case")]
pub async fn list_tools(
    args: ListToolsArgs,
    state: State<'_, AppState>,
) -> IpcResult<Vec<ToolView>> {
    let ListToolsArgs { name } = args;
    let live = running(&state, &name)?;
    let site = state.site()?;
    Ok(saved::list_open(&site, &name, &live.conn)
        .await?
        .into_iter()
        .map(|t| ToolView {
            name: t.name,
            // Shown as text: a bidirectional control would reorder what the
            // owner reads (names with one are refused at connect).
            title: t.title.map(|s| text::escape_controls(&s).into_owned()),
            description: t
                .description
                .map(|s| text::escape_controls(&s).into_owned()),
            input_schema: t.input_schema,
            annotations: t.annotations,
            effect: t.effect,
        })
        .collect())
}

/// The arguments of the `tool_hold` command, as the page sends them.
#[derive(serde::Deserialize, ts_rs::TS)]
#[serde(deny_unknown_fields)]
pub struct ToolHoldArgs {
    pub name: String,
}

/// The hold connection `name` is on (its server announced a tool list
/// change), recorded in the site: the error its calls are refused with, which
/// says what changed; `None` when it is not on hold.
#[tauri::command(rename_all = "snake_case")]
pub async fn tool_hold(
    args: ToolHoldArgs,
    state: State<'_, AppState>,
) -> IpcResult<Option<ErrorBody>> {
    let ToolHoldArgs { name } = args;
    let live = running(&state, &name)?;
    let site = state.site()?;
    Ok(saved::hold_if_changed(&site, &name, &live.conn)
        .await
        .map(|e| e.body()))
}

/// The arguments of the `call_tool` command, as the page sends them.
#[derive(serde::Deserialize, ts_rs::TS)]
#[serde(deny_unknown_fields)]
pub struct CallToolArgs {
    pub name: String,
    pub tool: String,
    /// Checked here to be an object (the form builds one).
    #[ts(type = "Record<string, unknown>")]
    pub arguments: Value,
    pub token: String,
}

/// Calls `tool` on connection `name` with `arguments` (an object); `token`
/// is the page's handle for [`cancel_call`].
#[tauri::command(rename_all = "snake_case")]
pub async fn call_tool(args: CallToolArgs, state: State<'_, AppState>) -> IpcResult<CallView> {
    let CallToolArgs {
        name,
        tool,
        arguments,
        token,
    } = args;
    check_id(&token)?;
    if !arguments.is_object() {
        return Err(Error::invalid(
            codes::CALL_INVALID,
            "a tool's arguments are a JSON object",
            "fill the form, or write an object such as {\"message\": \"hi\"} in the JSON editor",
        )
        .into());
    }
    let size = serde_json::to_vec(&arguments).map_or(0, |v| v.len());
    if size > MAX_ARGUMENTS_BYTES {
        return Err(Error::invalid(
            codes::CALL_INVALID,
            format!(
                "the arguments are {size} bytes; the window sends at most {MAX_ARGUMENTS_BYTES}"
            ),
            "use the CLI (`gatehouse call`) for very large arguments",
        )
        .into());
    }
    let live = running(&state, &name)?;
    let site = state.site()?;
    let handle = state.calls.begin(&token);
    let started = Instant::now();
    // A hold (the server announced a tool list change) is recorded at once;
    // a call refused for it gets what changed.
    let out = saved::call_open(
        &site,
        &name,
        &live.conn,
        &tool,
        arguments,
        CallOptions {
            cancel: Some(handle.token.clone()),
            ..CallOptions::default()
        },
    )
    .await;
    state.calls.end(&token, &handle);
    let view = out
        .result
        .as_ref()
        .map(|r| result_view::view(r, result_view::DEFAULT_VIEW_BYTES));
    if let Some(result) = out.result {
        state.results.keep(&out.call_id, result);
    }
    Ok(CallView {
        call_id: out.call_id,
        state: out.state,
        view,
        error: out.error,
        duration_ms: started.elapsed().as_millis() as u64,
    })
}

/// The arguments of the `cancel_call` command, as the page sends them.
#[derive(serde::Deserialize, ts_rs::TS)]
#[serde(deny_unknown_fields)]
pub struct CancelCallArgs {
    pub token: String,
}

/// Cancels the running call the page started with `token`; false if none runs.
#[tauri::command(rename_all = "snake_case")]
pub async fn cancel_call(args: CancelCallArgs, state: State<'_, AppState>) -> IpcResult<bool> {
    let CancelCallArgs { token } = args;
    check_id(&token)?;
    Ok(state.calls.cancel(&token))
}

/// The arguments of the `call_records` command, as the page sends them.
#[derive(serde::Deserialize, ts_rs::TS)]
#[serde(deny_unknown_fields)]
pub struct CallRecordsArgs {
    pub name: String,
    pub offset: u32,
    pub limit: u32,
}

/// A page of connection `name`'s call records, newest first: `limit` (at
/// most 1000) after the newest `offset`.
#[tauri::command(rename_all = "snake_case")]
pub async fn call_records(
    args: CallRecordsArgs,
    state: State<'_, AppState>,
) -> IpcResult<CallRecordPage> {
    let CallRecordsArgs {
        name,
        offset,
        limit,
    } = args;
    let site = state.site()?;
    let page = saved::call_records(&site.store, &name, offset, limit).await?;
    Ok(CallRecordPage {
        records: page.records.into_iter().map(record_view).collect(),
        total: page.total,
        next_offset: page.next_offset,
    })
}

fn record_view(r: CallRecord) -> CallRecordView {
    CallRecordView {
        duration_ms: r
            .finished_at_ms
            .map(|end| (end - r.received_at_ms).max(0) as u64),
        received_at: gatehouse_core::time::rfc3339(r.received_at_ms),
        call_id: r.call_id,
        tool: r.tool,
        state: r.state,
        effect: r.effect,
        error: r.error,
    }
}

/// The user's downloads folder (created if missing), else their home.
fn downloads(app: &AppHandle) -> Result<PathBuf, Error> {
    let dir = app
        .path()
        .download_dir()
        .or_else(|_| app.path().home_dir())
        .map_err(|e| {
            Error::new(
                codes::IO_ERROR,
                format!("cannot find a folder to save to: {e}"),
            )
        })?;
    std::fs::create_dir_all(&dir).map_err(|e| {
        Error::new(
            codes::IO_ERROR,
            format!("cannot create {}: {e}", dir.display()),
        )
    })?;
    Ok(dir)
}

fn write(path: PathBuf, bytes: &[u8]) -> Result<String, Error> {
    std::fs::write(&path, bytes).map_err(|e| {
        Error::new(
            codes::IO_ERROR,
            format!("cannot write {}: {e}", path.display()),
        )
    })?;
    Ok(path.display().to_string())
}

/// The arguments of the `save_call_result` command, as the page sends them.
#[derive(serde::Deserialize, ts_rs::TS)]
#[serde(deny_unknown_fields)]
pub struct SaveCallResultArgs {
    pub call_id: String,
}

/// Writes the full result of call `call_id` as JSON to the downloads folder;
/// returns the file's path.
#[tauri::command(rename_all = "snake_case")]
pub async fn save_call_result(
    args: SaveCallResultArgs,
    app: AppHandle,
    state: State<'_, AppState>,
) -> IpcResult<String> {
    let SaveCallResultArgs { call_id } = args;
    check_id(&call_id)?;
    let result = state.results.get(&call_id)?;
    let text = serde_json::to_vec_pretty(&result).expect("a JSON value serialises");
    Ok(write(
        downloads(&app)?.join(format!("gatehouse-{call_id}.json")),
        &text,
    )?)
}

/// The arguments of the `save_stderr` command, as the page sends them.
#[derive(serde::Deserialize, ts_rs::TS)]
#[serde(deny_unknown_fields)]
pub struct SaveStderrArgs {
    pub name: String,
}

/// Writes what connection `name`'s stderr tail kept (core's marker included,
/// secrets redacted) to the downloads folder; returns the file's path.
#[tauri::command(rename_all = "snake_case")]
pub async fn save_stderr(
    args: SaveStderrArgs,
    app: AppHandle,
    state: State<'_, AppState>,
) -> IpcResult<String> {
    let SaveStderrArgs { name } = args;
    let live = state.connections.get(&name).ok_or_else(|| {
        Error::invalid(
            codes::CONNECTION_NOT_OPEN,
            format!("connection {name} was not started in this window"),
            "press Connect first",
        )
    })?;
    let text = live.conn.stderr().snapshot().text;
    let file = format!(
        "gatehouse-stderr-{name}-{}.log",
        gatehouse_core::time::now_ms()
    );
    Ok(write(downloads(&app)?.join(file), text.as_bytes())?)
}

//! The TypeScript types of everything that crosses IPC, generated from the Rust
//! types with `ts-rs` into `ui/src/generated/ipc-types.ts` (see
//! docs/decisions.md). The page imports them from there; none is written twice.
//!
//! The commands come from the one list, `commands/list.rs`: each command's
//! argument struct and a `Commands` map (`name: { args; result; event? }`)
//! that the page's `call` is typed against, so a renamed command or field
//! fails `tsc`. The same expansion checks at compile time that each function
//! takes the listed `Args` first and answers the listed result.
//!
//! The check is a snapshot test (expect-test): it fails when the checked-in
//! file differs from what the Rust types produce now.
//! `bash scripts/ipc-types.sh` rewrites the file.

use std::fmt::Write as _;

use gatehouse_core::access::approvals::{Decide, HeldCall, HeldNotice, Status as HeldStatus};
use gatehouse_core::access::key_overview::KeyFilter;
use gatehouse_core::access::key_usage::{KeyUsage, ToolUsage};
use gatehouse_core::access::keys::{KeyInfo, KeyStatus};
use gatehouse_core::access::oauth::Principal;
use gatehouse_core::access::oauth::flow::{PairingApproved, PairingRequest};
use gatehouse_core::access::oauth::grants::{GrantInfo, GrantOverview};
use gatehouse_core::access::permissions::Role;
use gatehouse_core::access::restrictions::{
    ContentScope, Rate, Restrictions, SlugPattern, StatusScope,
};
use gatehouse_core::access::usage_days::DayUsage;
use gatehouse_core::client_config::doctor::{Check, EntryReport, FileReport, Status};
use gatehouse_core::client_config::{
    Client, DoctorReport, Format, GeneratedConfig, InstallOutcome, Location, Scope, Snippet,
};
use gatehouse_core::error::{Code, ErrorBody};
use gatehouse_core::mcp::server::key_form::{RestrictionForm, ToolChoice};
use gatehouse_core::mcp::server::key_report::KeyReport;
use gatehouse_core::mcp::server::reach::Reach;
use gatehouse_core::sandbox::probe::{Layer, LayerName};
use gatehouse_core::sandbox::{Backend, ExitInfo, Isolation};
use gatehouse_core::site::config::ConfigEntry;
use gatehouse_core::supervise::remote::RemoteConfig;
use gatehouse_core::supervise::{LimitedKey, ServeSettings, ServeStats, ServeStatus};
use ts_rs::{Config, TS};

use crate::commands;
use crate::commands::actor_preview::{ActorChoice, ActorComparison, PreviewChoices, PreviewKey};
use crate::commands::app::AppInfo;
use crate::commands::client_config::ClientChoice;
use crate::commands::connection_calls::{CallRecordPage, CallRecordView, CallView, ToolView};
use crate::commands::connections::{ConnectionView, LiveView, TailMessage};
use crate::commands::keys::MintedKey;
use crate::commands::site::SiteSummary;
use crate::commands::users::PermissionRow;
use crate::error::IpcResult;
use gatehouse_core::access::audit::{ImportTrust, Imported as AuditImport, Report as AuditReport};
use gatehouse_core::access::audit_view::{AuditEntry, AuditExport, AuditFilter, AuditPage};
use gatehouse_core::access::key_overview::{ExpiryWarning, KeyOverview};
use gatehouse_core::access::users::User;
use gatehouse_core::connections::actor_preview::{
    ActorManifest, ComparedTool, Presence, PreviewTool,
};
use gatehouse_core::connections::consent::{ConsentEnv, ConsentLimits, ConsentRequest, EnvSource};
use gatehouse_core::connections::form::{DefinitionForm, EnvKind, EnvRow};
use gatehouse_core::connections::pin::PendingReason;
use gatehouse_core::connections::pin::diff::{ChangedTool, FieldChange, PinnedTool, ToolsDiff};
use gatehouse_core::connections::registry::LiveState;
use gatehouse_core::connections::result_view::{ResultView, ViewItem};
use gatehouse_core::mcp::client::{CallState, EffectClass, EndReason, LiveUsage};
use gatehouse_core::sandbox::stderr::StderrCounters;
use gatehouse_core::site::remembered::{BackendInfo, RecentSite};

/// Where the generated file lives, from the repository root.
pub const PATH: &str = "ui/src/generated/ipc-types.ts";

fn decl<T: TS>(cfg: &Config, out: &mut String) {
    out.push('\n');
    if let Some(docs) = T::docs() {
        out.push_str(&docs);
    }
    let _ = writeln!(out, "export {}", T::decl(cfg));
}

/// Proof, checked by the compiler, that a command function takes `A` first and
/// answers `R` (itself, in `IpcResult`, or in a future of `IpcResult`), after
/// up to three shell arguments (`State`, `AppHandle`, `Channel`). `M` only
/// tells the impls apart; the compiler infers it.
pub trait Answers<A, R, M> {}

/// Marks a function that returns `R` itself.
pub struct Plain;
/// Marks a function that returns `IpcResult<R>`.
pub struct Fallible;
/// Marks an async function whose future `F` yields `IpcResult<R>`.
pub struct Later<F>(F);

macro_rules! answers {
    ($($shell:ident),*) => {
        impl<F, A, R, $($shell),*> Answers<A, R, (Plain, $($shell,)*)> for F
            where F: Fn(A, $($shell),*) -> R {}
        impl<F, A, R, $($shell),*> Answers<A, R, (Fallible, $($shell,)*)> for F
            where F: Fn(A, $($shell),*) -> IpcResult<R> {}
        impl<F, A, R, Fut, $($shell),*> Answers<A, R, (Later<Fut>, $($shell,)*)> for F
            where F: Fn(A, $($shell),*) -> Fut, Fut: std::future::Future<Output = IpcResult<R>> {}
    };
}
answers!();
answers!(S1);
answers!(S1, S2);
answers!(S1, S2, S3);

/// Compiles only when `command` takes `A` and answers `R` (see [`Answers`]).
fn answers<A, R, M>(_command: &impl Answers<A, R, M>) {}

/// The commands' argument structs and the `Commands` map.
fn command_map(cfg: &Config, out: &mut String) {
    // Declares each command's argument struct and returns the `Commands` map.
    macro_rules! commands {
        ($($screen:ident :: $name:ident (
            $args:ident $(, Channel<$event:ty>)?
        ) -> $result:ty),* $(,)?) => {{
            let mut map = String::new();
            $(
                answers::<commands::$screen::$args, $result, _>(&commands::$screen::$name);
                decl::<commands::$screen::$args>(cfg, out);
                let _ = write!(
                    map,
                    "  {}: {{ args: {}; result: {}",
                    stringify!($name),
                    <commands::$screen::$args as TS>::name(cfg),
                    <$result as TS>::name(cfg),
                );
                $(let _ = write!(map, "; event: {}", <$event as TS>::name(cfg));)?
                map.push_str(" };\n");
            )*
            map
        }};
    }
    let map = include!("commands/list.rs");
    let _ = write!(
        out,
        "\n/** Every command: what it takes (`args`), answers (`result`) and streams\n \
         * (`event`), from `src-tauri/src/commands/list.rs`. */\n\
         export type Commands = {{\n{map}}};\n"
    );
}

/// The whole file, as the current Rust types describe it.
pub fn render() -> String {
    // serde_json writes every integer as a JSON number.
    let cfg = Config::new().with_large_int("number");
    let mut out = String::from(
        "// Generated from the Rust types by src-tauri/src/ipc_types.rs (ts-rs).\n\
         // Do not edit: run `bash scripts/ipc-types.sh` after changing a type.\n\
         // Field names are snake_case, as in the CLI's --json and MCP results;\n\
         // times are RFC 3339 strings.\n",
    );
    // Errors.
    decl::<Code>(&cfg, &mut out);
    decl::<ErrorBody>(&cfg, &mut out);
    let codes: Vec<String> = Code::all().map(|c| format!("  \"{c}\",\n")).collect();
    let _ = write!(
        out,
        "\n/** Every code, in the order of `gatehouse_core::error::Code`. */\n\
         export const CODES: readonly Code[] = [\n{}];\n",
        codes.concat()
    );
    // Window frame and site.
    decl::<AppInfo>(&cfg, &mut out);
    decl::<BackendInfo>(&cfg, &mut out);
    decl::<SiteSummary>(&cfg, &mut out);
    decl::<RecentSite>(&cfg, &mut out);
    // Keys.
    decl::<Role>(&cfg, &mut out);
    decl::<KeyStatus>(&cfg, &mut out);
    decl::<StatusScope>(&cfg, &mut out);
    decl::<SlugPattern>(&cfg, &mut out);
    decl::<Rate>(&cfg, &mut out);
    decl::<ContentScope>(&cfg, &mut out);
    decl::<Restrictions>(&cfg, &mut out);
    decl::<KeyInfo>(&cfg, &mut out);
    decl::<MintedKey>(&cfg, &mut out);
    decl::<ExpiryWarning>(&cfg, &mut out);
    decl::<KeyOverview>(&cfg, &mut out);
    decl::<RestrictionForm>(&cfg, &mut out);
    decl::<ToolChoice>(&cfg, &mut out);
    decl::<Reach>(&cfg, &mut out);
    decl::<ToolUsage>(&cfg, &mut out);
    decl::<KeyUsage>(&cfg, &mut out);
    decl::<DayUsage>(&cfg, &mut out);
    decl::<KeyReport>(&cfg, &mut out);
    // OAuth grants.
    decl::<Principal>(&cfg, &mut out);
    decl::<GrantInfo>(&cfg, &mut out);
    decl::<GrantOverview>(&cfg, &mut out);
    decl::<PairingRequest>(&cfg, &mut out);
    decl::<PairingApproved>(&cfg, &mut out);
    // Users and audit.
    decl::<User>(&cfg, &mut out);
    decl::<PermissionRow>(&cfg, &mut out);
    decl::<AuditFilter>(&cfg, &mut out);
    decl::<AuditEntry>(&cfg, &mut out);
    decl::<AuditPage>(&cfg, &mut out);
    decl::<AuditImport>(&cfg, &mut out);
    decl::<ImportTrust>(&cfg, &mut out);
    decl::<AuditReport>(&cfg, &mut out);
    decl::<AuditExport>(&cfg, &mut out);
    // Client config.
    decl::<Client>(&cfg, &mut out);
    decl::<ClientChoice>(&cfg, &mut out);
    decl::<Format>(&cfg, &mut out);
    decl::<Location>(&cfg, &mut out);
    decl::<Snippet>(&cfg, &mut out);
    decl::<GeneratedConfig>(&cfg, &mut out);
    decl::<Scope>(&cfg, &mut out);
    decl::<KeyFilter>(&cfg, &mut out);
    decl::<ConfigEntry>(&cfg, &mut out);
    decl::<InstallOutcome>(&cfg, &mut out);
    decl::<Status>(&cfg, &mut out);
    decl::<Check>(&cfg, &mut out);
    decl::<EntryReport>(&cfg, &mut out);
    decl::<FileReport>(&cfg, &mut out);
    decl::<DoctorReport>(&cfg, &mut out);
    // Connections and the stderr channel.
    decl::<StderrCounters>(&cfg, &mut out);
    decl::<TailMessage>(&cfg, &mut out);
    decl::<ExitInfo>(&cfg, &mut out);
    decl::<LayerName>(&cfg, &mut out);
    decl::<Layer>(&cfg, &mut out);
    decl::<Isolation>(&cfg, &mut out);
    decl::<LiveState>(&cfg, &mut out);
    decl::<LiveUsage>(&cfg, &mut out);
    decl::<EndReason>(&cfg, &mut out);
    decl::<LiveView>(&cfg, &mut out);
    decl::<ConnectionView>(&cfg, &mut out);
    // Connection editing, consent, tools and calls.
    decl::<EnvKind>(&cfg, &mut out);
    decl::<EnvRow>(&cfg, &mut out);
    decl::<DefinitionForm>(&cfg, &mut out);
    decl::<EnvSource>(&cfg, &mut out);
    decl::<ConsentEnv>(&cfg, &mut out);
    decl::<Backend>(&cfg, &mut out);
    decl::<ConsentLimits>(&cfg, &mut out);
    decl::<ConsentRequest>(&cfg, &mut out);
    // Tool pinning: what a CONNECTION_TOOLS_CHANGED error's detail holds.
    decl::<PendingReason>(&cfg, &mut out);
    decl::<PinnedTool>(&cfg, &mut out);
    decl::<FieldChange>(&cfg, &mut out);
    decl::<ChangedTool>(&cfg, &mut out);
    decl::<ToolsDiff>(&cfg, &mut out);
    decl::<CallState>(&cfg, &mut out);
    decl::<EffectClass>(&cfg, &mut out);
    decl::<ToolView>(&cfg, &mut out);
    decl::<ViewItem>(&cfg, &mut out);
    decl::<ResultView>(&cfg, &mut out);
    decl::<CallView>(&cfg, &mut out);
    decl::<CallRecordView>(&cfg, &mut out);
    decl::<CallRecordPage>(&cfg, &mut out);
    // Actor preview.
    decl::<ActorChoice>(&cfg, &mut out);
    decl::<PreviewKey>(&cfg, &mut out);
    decl::<PreviewChoices>(&cfg, &mut out);
    decl::<PreviewTool>(&cfg, &mut out);
    decl::<ActorManifest>(&cfg, &mut out);
    decl::<Presence>(&cfg, &mut out);
    decl::<ComparedTool>(&cfg, &mut out);
    decl::<ActorComparison>(&cfg, &mut out);
    // Approvals: held calls waiting for the site owner.
    decl::<Decide>(&cfg, &mut out);
    decl::<HeldStatus>(&cfg, &mut out);
    decl::<HeldCall>(&cfg, &mut out);
    decl::<HeldNotice>(&cfg, &mut out);
    // Serve panel.
    decl::<LimitedKey>(&cfg, &mut out);
    decl::<ServeStats>(&cfg, &mut out);
    decl::<ServeSettings>(&cfg, &mut out);
    decl::<ServeStatus>(&cfg, &mut out);
    decl::<RemoteConfig>(&cfg, &mut out);
    // Commands: arguments and the map.
    command_map(&cfg, &mut out);
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Fails when a Rust type that crosses IPC changed and the page's types
    /// were not regenerated (`bash scripts/ipc-types.sh`, which runs it with
    /// `UPDATE_EXPECT=1`).
    #[test]
    fn generated_ipc_types_are_current() {
        let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join(PATH);
        expect_test::expect_file![path].assert_eq(&render());
    }

    #[test]
    fn the_code_union_lists_every_code() {
        let fresh = render();
        for code in Code::all() {
            assert!(fresh.contains(&format!("\"{code}\"")), "{code} missing");
        }
    }
}

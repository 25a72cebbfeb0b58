//! The error object that crosses IPC.
//!
//! Every command returns `Result<T, IpcError>`, so the page always receives an
//! object `{code, message, hint?, detail?}` (never a flattened string) and can
//! match on `code`. The UI lists the codes it knows in `ui/src/ipc.ts`.

use gatehouse_core::{Error, ErrorBody};
use serde::Serialize;

/// A core error in the shape the page receives.
#[derive(Debug, Clone, Serialize)]
#[serde(transparent)]
pub struct IpcError(pub ErrorBody);

impl From<Error> for IpcError {
    fn from(err: Error) -> Self {
        // The page shows `message`; whoever investigates later reads the log.
        tracing::debug!(code = %err.code, message = %err.message, "command failed");
        Self(err.body())
    }
}

/// What every command returns.
pub type IpcResult<T> = Result<T, IpcError>;

#[cfg(test)]
mod tests {
    use super::*;
    use gatehouse_core::error::codes;

    #[test]
    fn serializes_as_an_object_with_code_message_hint() {
        let err: IpcError = Error::new(codes::SITE_NOT_FOUND, "no site here")
            .hint("run gatehouse site init")
            .into();
        let value = serde_json::to_value(&err).unwrap();
        assert_eq!(
            value,
            serde_json::json!({
                "code": "SITE_NOT_FOUND",
                "message": "no site here",
                "hint": "run gatehouse site init",
            })
        );
    }

    /// The UI keeps the code list in one place; a code added to core without
    /// being added there would reach the page as an unknown code.
    #[test]
    fn ui_lists_every_core_error_code() {
        let ui = include_str!("../../ui/src/ipc.ts");
        let missing: Vec<&str> = gatehouse_core::error::Code::all()
            .map(|code| code.as_str())
            .filter(|code| !ui.contains(&format!("\"{code}\"")))
            .collect();
        assert!(
            missing.is_empty(),
            "add these codes to ERROR_CODES in ui/src/ipc.ts: {missing:?}"
        );
    }
}

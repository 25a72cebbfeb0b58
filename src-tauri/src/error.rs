//! The error object that crosses IPC.
//!
//! Every command returns `Result<T, IpcError>`, so the page always receives an
//! object `{code, message, hint?, detail?}` (never a flattened string) and can
//! match on `code`. Its TypeScript type, codes included, is generated from
//! [`ErrorBody`] and `Code` by [`crate::ipc_types`].

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
}

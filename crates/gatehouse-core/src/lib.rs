//! Gatehouse core: all logic, no Tauri and no clap.
//!
//! Map: [`site`] finds and opens a site folder; [`store`] holds every SQL
//! statement; [`keys`] mints and verifies API keys; [`actor`] resolves who a
//! process runs as; [`permissions`] decides every action; [`audit`] keeps the
//! hash-chained log.

pub mod error;
pub mod redact;

pub use error::{Error, ErrorBody, Result};

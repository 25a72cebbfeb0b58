//! Who may do what, and the record of what they did.
//!
//! Map: [`keys`] mints, rolls, revokes and verifies API keys; [`actor`] resolves
//! the one actor a process runs as; [`permissions`] is the role → action table
//! and the check every action goes through; [`audit`] is the hash-chained log
//! and [`checkpoint`] signs its head with a key kept outside the database.
//! For the admin screens: [`audit_view`] reads the log in filtered pages and
//! exports it; [`key_overview`] lists keys with their uses and expiry warnings.

pub mod actor;
pub mod audit;
pub mod audit_view;
pub mod checkpoint;
pub mod key_overview;
pub mod keys;
pub mod permissions;

//! Who may do what, and the record of what they did.
//!
//! Map: [`keys`] mints, rolls, revokes and verifies API keys; [`actor`] resolves
//! the one actor a process runs as; [`permissions`] is the role → action table
//! and the check every action goes through; [`audit`] is the hash-chained log
//! and [`checkpoint`] signs its head with a key kept outside the database.

pub mod actor;
pub mod audit;
pub mod checkpoint;
pub mod keys;
pub mod permissions;

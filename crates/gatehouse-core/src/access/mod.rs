//! Who may do what, and the record of what they did.
//!
//! Map: [`keys`] mints, rolls, revokes and verifies API keys; [`users`] are the
//! people with roles; [`actor`] resolves the one actor a process runs as;
//! [`permissions`] is the role → action table and the check every action goes
//! through; [`audit`] is the hash-chained log (its signed checkpoints are the
//! site's, [`crate::site::checkpoint`]: they are kept per site folder).
//! [`restrictions`] narrow a key beyond its roles and [`rate`] holds each
//! key to its call rate; [`key_usage`] counts what each key did lately
//! and [`usage_days`] by day, for the Keys screen's chart.
//! [`approvals`] holds calls until a person says yes (the policy, the queue
//! and its decisions).
//! For the admin screens: [`audit_view`] reads the log in filtered pages and
//! exports it; [`key_overview`] lists keys with their uses and expiry warnings.
//! [`oauth`] is `gatehouse serve`'s OAuth 2.1: clients, consent, grants and
//! tokens that act as a key's actor narrowed to scopes.

pub mod actor;
pub mod approvals;
pub mod audit;
pub mod audit_view;
pub mod key_overview;
pub mod key_usage;
pub mod keys;
pub mod oauth;
pub mod permissions;
pub mod rate;
pub mod restrictions;
pub mod usage_days;
pub mod users;

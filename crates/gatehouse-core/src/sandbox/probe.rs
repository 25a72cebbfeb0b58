//! The what-applied report: how a child of a profile is confined on this
//! system ([`Isolation`]), which `probe`, `connections show`, the live
//! connection's status and the desktop's Isolation row all read. Each
//! backend derives it from what it applies ([`describe`]); nothing here
//! guesses.

use serde::Serialize;

use super::profile::Profile;

/// How a child is confined, as reported by `probe` and the connection status.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, ts_rs::TS)]
pub struct Isolation {
    pub backend: &'static str,
    /// Landlock ABI applied (0: not applied).
    pub landlock_abi: u8,
    /// Everything but scratch and the profile's read-write paths is mounted
    /// read-only for the server, and scratch is a tmpfs of the quota's size
    /// (Landlock backend, where user namespaces are allowed); bwrap's own
    /// mounts do the same for the first.
    pub read_only_view: bool,
    pub network: bool,
    /// With `network` off, the TCP ports it may still connect to (always
    /// present, empty or not: the page reads it as an array).
    pub connect_ports: Vec<u16>,
    pub scratch_quota_bytes: u64,
    /// Whether the server may open UNIX sockets (named ones included).
    pub unix_sockets: bool,
    /// Scheduling niceness the server runs at (0: as the host).
    pub nice: u8,
    /// What is weaker than asked, said once per connection.
    pub warnings: Vec<String>,
}

/// How a child of `profile` will be confined on this system, with what is
/// weaker than asked said in `warnings` (once per connection: in `probe`, in
/// the live connection's status and in `connections show`).
pub fn describe(profile: &Profile) -> Isolation {
    super::os::describe(profile)
}

//! Hardening of the host process itself, called first thing by the CLI and
//! the desktop app: not dumpable (a same-user child cannot read its
//! environment or memory through `/proc`, nor attach to it), and the
//! subreaper of its descendants (see [`super::reaper`]).

use crate::error::{Error, Result, codes};

/// Marks the process non-dumpable and makes it a subreaper.
pub fn harden_host() -> Result<()> {
    nix::sys::prctl::set_dumpable(false).map_err(|e| {
        Error::new(
            codes::IO,
            format!("could not mark the process non-dumpable: {e}"),
        )
    })?;
    super::reaper::become_subreaper()
}

/// Whether the process is dumpable (false after [`harden_host`]).
pub fn is_dumpable() -> bool {
    nix::sys::prctl::get_dumpable().unwrap_or(true)
}

//! What the Linux backend applies for a profile on this host, and what it
//! cannot: the Landlock ABI, the read-only view, the process ceiling of a
//! root host, bwrap's presence. [`describe`] is the one source of the
//! status `probe`, `connections show` and the desktop read.

use crate::sandbox::probe::Isolation;
use crate::sandbox::profile::{Backend, Profile};

use super::landlock::{LandlockSupport, probe};

/// What the host offers beside Landlock.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct HostSupport {
    /// Children can get a read-only view of the file system (see `view`).
    pub read_only_view: bool,
    /// The process ceiling holds: the host is not root (for whom the kernel
    /// ignores `RLIMIT_NPROC`), or a pids cgroup can be made (see `cgroup`).
    pub process_ceiling: bool,
}

/// What this host offers beside Landlock (tried once per process).
pub fn host_support() -> HostSupport {
    HostSupport {
        read_only_view: super::view::available(),
        process_ceiling: !nix::unistd::getuid().is_root() || super::cgroup::available(),
    }
}

/// How a child of `profile` will be confined on this host, with what is
/// weaker than asked said in `warnings` (once per connection: in `probe`, in
/// the live connection's status and in `connections show`).
pub fn describe(profile: &Profile) -> Isolation {
    describe_on(profile, probe(), host_support())
}

/// [`describe`] on a kernel offering `support`, and a host offering `host`.
fn describe_on(profile: &Profile, support: LandlockSupport, host: HostSupport) -> Isolation {
    let mut warnings = Vec::new();
    let read_only_view = profile.backend == Backend::Landlock && host.read_only_view;
    let mut landlock_abi = 0;
    let mut network = profile.network;
    match profile.backend {
        Backend::Landlock if !support.available() => {
            // Nothing rules TCP without Landlock (the socket filter only
            // narrows families and types), so the status must not say "no network".
            network = true;
            warnings.push(if host.read_only_view {
                "Landlock is not available on this kernel: the server can read any file this user can and use the network (writes outside its scratch are still refused by its read-only view)".to_string()
            } else {
                "Landlock is not available on this kernel: the server runs with resource limits and no_new_privs only (files and network are not confined)".to_string()
            });
        }
        Backend::Landlock => {
            landlock_abi = support.abi;
            if !profile.network && !support.network() {
                network = true;
                warnings.push(format!(
                    "Landlock ABI {} cannot restrict TCP (needs 4): the server can use the network",
                    support.abi
                ));
            }
            if support.abi < 6 {
                warnings.push(format!(
                    "Landlock ABI {} cannot scope signals (needs 6): the server can signal other processes of this user, this app among them",
                    support.abi
                ));
            }
            if !host.read_only_view {
                warnings.push(
                    "user namespaces are not available: the server can change the mode and times of this user's files outside its scratch (Landlock does not rule them)".to_string(),
                );
            }
        }
        Backend::Bwrap => {
            if super::bwrap::find().is_err() {
                warnings.push("bwrap is not installed: connecting fails until it is".to_string());
            }
        }
        Backend::Seatbelt | Backend::JobObject => {
            // Refused at connect (Profile::validate); said here as well.
            network = true;
            warnings.push(format!(
                "the {} backend does not exist on Linux: connecting fails until the connection uses landlock, bwrap or none",
                profile.backend.as_str()
            ));
        }
        Backend::None => {
            // Nothing confines its network either, whatever the profile says.
            network = true;
            warnings.push(
                "sandbox backend none: the server can reach anything this user can".to_string(),
            );
        }
    }
    if !host.process_ceiling {
        warnings.push(format!(
            "running as root without a writable pids cgroup: the ceiling of {} processes is not enforced (the kernel exempts root from RLIMIT_NPROC)",
            profile.max_processes()
        ));
    }
    Isolation {
        backend: profile.backend.as_str(),
        read_only_view,
        landlock_abi,
        network,
        connect_ports: if network {
            Vec::new()
        } else {
            profile.connect_ports.clone()
        },
        scratch_quota_bytes: profile.scratch_quota(),
        unix_sockets: profile.unix_sockets || profile.backend == Backend::None,
        nice: profile.nice(),
        warnings,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Each ABI below what a default profile relies on says what it loses,
    /// once; ABI 6 and later say nothing.
    #[test]
    fn older_landlock_abis_say_what_they_cannot_confine() {
        let profile = Profile::default();
        let full = HostSupport {
            read_only_view: true,
            process_ceiling: true,
        };
        let warned = |abi| describe_on(&profile, LandlockSupport { abi }, full).warnings;
        assert_eq!(warned(7), Vec::<String>::new());
        assert_eq!(warned(6), Vec::<String>::new());
        let five = warned(5);
        assert_eq!(five.len(), 1, "{five:?}");
        assert!(five[0].contains("cannot scope signals"), "{five:?}");
        let three = warned(3);
        assert_eq!(three.len(), 2, "{three:?}");
        assert!(three[0].contains("cannot restrict TCP"), "{three:?}");
        assert!(describe_on(&profile, LandlockSupport { abi: 3 }, full).network);
        let none = warned(0);
        assert!(none[0].contains("not available"), "{none:?}");
        assert!(describe_on(&profile, LandlockSupport { abi: 0 }, full).network);
    }

    /// A host without user namespaces, or root without a pids cgroup, says
    /// what it cannot hold; a full host says nothing.
    #[test]
    fn missing_host_layers_are_said_not_skipped() {
        let profile = Profile::default();
        let seven = LandlockSupport { abi: 7 };
        let on = |read_only_view, process_ceiling| {
            describe_on(
                &profile,
                seven,
                HostSupport {
                    read_only_view,
                    process_ceiling,
                },
            )
        };
        assert!(on(true, true).read_only_view);
        assert!(on(true, true).warnings.is_empty());
        let no_view = on(false, true);
        assert!(!no_view.read_only_view);
        assert!(
            no_view.warnings[0].contains("mode and times"),
            "{no_view:?}"
        );
        let no_ceiling = on(true, false).warnings;
        assert!(
            no_ceiling[0].contains("256 processes is not enforced"),
            "{no_ceiling:?}"
        );
    }
}

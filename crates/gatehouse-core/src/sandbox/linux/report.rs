//! What the Linux backend applies for a profile on this host, and what it
//! cannot: the Landlock ABI, the read-only view, the process ceiling of a
//! root host, bwrap's presence. [`describe`] is the one source of the
//! status `probe`, `connections show` and the desktop read.

use crate::sandbox::probe::{Isolation, Layer, LayerName, common_layers, size_text};
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
    /// The host runs as root: its children keep uid 0, which file
    /// permissions do not stop.
    pub root: bool,
}

/// What this host offers beside Landlock (tried once per process).
pub fn host_support() -> HostSupport {
    HostSupport {
        read_only_view: super::view::available(),
        process_ceiling: !nix::unistd::getuid().is_root() || super::cgroup::available(),
        root: nix::unistd::getuid().is_root(),
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
    if host.root && matches!(profile.backend, Backend::Landlock | Backend::Bwrap) {
        warnings.push(
            "running as root: the server keeps uid 0, so root-only files in the folders it may read (/etc/shadow, private keys under /etc) are readable to it; run Gatehouse as an ordinary user".to_string(),
        );
    }
    if !host.process_ceiling {
        warnings.push(format!(
            "running as root without a writable pids cgroup: the ceiling of {} processes is not enforced (the kernel exempts root from RLIMIT_NPROC)",
            profile.max_processes()
        ));
    }
    let unix_sockets = profile.unix_sockets || profile.backend == Backend::None;
    let layers = layers_on(
        profile,
        support,
        host,
        network,
        unix_sockets,
        read_only_view,
    );
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
        unix_sockets,
        nice: profile.nice(),
        layers,
        warnings,
    }
}

/// Every layer of the Linux backends for `profile`, applied or not and why
/// not; `network`, `unix_sockets` and `read_only_view` as [`describe_on`]
/// decided them.
fn layers_on(
    profile: &Profile,
    support: LandlockSupport,
    host: HostSupport,
    network: bool,
    unix_sockets: bool,
    read_only_view: bool,
) -> Vec<Layer> {
    use LayerName as L;
    let backend = profile.backend;
    let other = |what: &str| format!("the {} backend does not apply {what}", backend.as_str());
    let allowed_net = "the profile allows the network (--network)";
    let mut out = Vec::new();
    match backend {
        Backend::Landlock => {
            let abi = support.abi;
            out.push(Layer::either(
                L::LandlockFs,
                support.available(),
                format!("ABI {abi}"),
                "Landlock is not available on this kernel",
            ));
            out.push(Layer::either(
                L::SignalScope,
                abi >= 6,
                format!("ABI {abi}"),
                if support.available() {
                    format!("Landlock ABI {abi} cannot scope signals (needs 6)")
                } else {
                    "Landlock is not available on this kernel".to_string()
                },
            ));
            out.push(Layer::applied(
                L::Seccomp,
                "socket families, io_uring, keyctl, leases and other processes' limits refused",
            ));
            out.push(Layer::either(
                L::ReadOnlyView,
                read_only_view,
                "everything but scratch and the read-write paths read-only; scratch in memory",
                "user namespaces are not available on this host",
            ));
            out.push(if !network {
                Layer::applied(
                    L::Network,
                    match profile.connect_ports.as_slice() {
                        [] => format!("TCP refused by Landlock (ABI {abi}), UDP by seccomp"),
                        ports => format!(
                            "TCP refused by Landlock (ABI {abi}) but connect to port {}, UDP by seccomp",
                            ports.iter().map(u16::to_string).collect::<Vec<_>>().join(", ")
                        ),
                    },
                )
            } else if profile.network {
                Layer::not_applied(L::Network, allowed_net)
            } else if support.available() {
                Layer::not_applied(
                    L::Network,
                    format!("Landlock ABI {abi} cannot restrict TCP (needs 4)"),
                )
            } else {
                Layer::not_applied(L::Network, "Landlock is not available on this kernel")
            });
            out.push(Layer::either(
                L::UnixSockets,
                !unix_sockets,
                "refused by seccomp",
                "the profile allows them (--allow-unix-sockets)",
            ));
        }
        Backend::Bwrap => {
            let found = super::bwrap::find().is_ok();
            out.push(Layer::either(
                L::Bwrap,
                found,
                "private mounts (system read-only, scratch read-write), own PID namespace, dies with the host",
                "bwrap is not installed: connecting fails until it is",
            ));
            out.push(Layer::either(
                L::Network,
                !profile.network && found,
                "refused by namespace",
                if profile.network {
                    allowed_net
                } else {
                    "bwrap is not installed"
                },
            ));
            // Sharing the host's network namespace shares its abstract UNIX
            // sockets (`@…`, bound to no path: X11's, D-Bus's), which no mount
            // hides and bwrap has no filter for.
            out.push(Layer::either(
                L::UnixSockets,
                found && !profile.network,
                "the host's sockets are not mounted, its abstract ones are in another network namespace",
                if found {
                    "the network is the host's (--network), and with it the host's abstract sockets (@…, e.g. X11's); the landlock backend refuses them"
                } else {
                    "bwrap is not installed"
                },
            ));
            out.push(Layer::not_applied(
                L::LandlockFs,
                other("Landlock (its domain forbids bwrap's mounts)"),
            ));
        }
        Backend::None | Backend::Seatbelt | Backend::JobObject => {
            let why = if backend == Backend::None {
                "sandbox backend none confines nothing".to_string()
            } else {
                format!("the {} backend does not exist on Linux", backend.as_str())
            };
            for name in [L::LandlockFs, L::Seccomp, L::Network, L::UnixSockets] {
                out.push(Layer::not_applied(name, why.clone()));
            }
        }
    }
    out.push(Layer::applied(
        L::NoNewPrivs,
        if backend == Backend::Bwrap {
            "set by bwrap"
        } else {
            "no_new_privs, every capability dropped"
        },
    ));
    out.push(match profile.max_memory_bytes {
        Some(m) => Layer::applied(L::MemoryCeiling, format!("RLIMIT_DATA {}", size_text(m))),
        None => Layer::not_applied(L::MemoryCeiling, "the connection sets none"),
    });
    out.push(Layer::applied(
        L::OpenFiles,
        format!("{} per process", profile.max_open_files()),
    ));
    out.extend(common_layers(
        profile,
        Layer::either(
            L::ProcessCeiling,
            host.process_ceiling,
            format!("{} processes", profile.max_processes()),
            "running as root without a writable pids cgroup (the kernel exempts root from RLIMIT_NPROC)",
        ),
    ));
    out
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
            root: false,
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

    /// bwrap with the network shares the host's network namespace, and with
    /// it the host's abstract UNIX sockets: the status said UNIX sockets were
    /// confined, while a child reached a socket the host had bound at `@name`.
    #[test]
    fn bwrap_with_the_network_does_not_claim_to_confine_unix_sockets() {
        use crate::sandbox::probe::LayerName as L;
        let full = HostSupport {
            read_only_view: true,
            process_ceiling: true,
            root: false,
        };
        let bwrap = |network| Profile {
            backend: Backend::Bwrap,
            network,
            ..Profile::default()
        };
        let shared = describe_on(&bwrap(true), LandlockSupport { abi: 7 }, full);
        let sockets = shared.layer(L::UnixSockets).expect("listed");
        assert!(!sockets.applied, "{}", sockets.line());
        let own = describe_on(&bwrap(false), LandlockSupport { abi: 7 }, full);
        if super::super::bwrap::find().is_ok() {
            assert!(
                sockets.line().contains("abstract sockets"),
                "{}",
                sockets.line()
            );
            assert!(own.layer(L::UnixSockets).unwrap().applied);
        }
    }

    /// Every layer of the Linux backend is listed, applied or not, and a
    /// layer that did not apply says why: an old kernel, an open profile,
    /// the none backend.
    #[test]
    fn each_layer_says_whether_it_applied_and_why_not() {
        use crate::sandbox::probe::LayerName as L;
        let full = HostSupport {
            read_only_view: true,
            process_ceiling: true,
            root: false,
        };
        let line = |iso: &Isolation, name| iso.layer(name).expect("listed").line();
        let seven = describe_on(&Profile::default(), LandlockSupport { abi: 7 }, full);
        assert_eq!(line(&seven, L::LandlockFs), "Landlock fs: applied (ABI 7)");
        assert_eq!(
            line(&seven, L::Network),
            "network: applied (TCP refused by Landlock (ABI 7), UDP by seccomp)"
        );
        assert_eq!(
            line(&seven, L::UnixSockets),
            "UNIX sockets: applied (refused by seccomp)"
        );
        assert_eq!(
            line(&seven, L::MemoryCeiling),
            "memory ceiling: not applied: the connection sets none"
        );
        for name in [
            L::Seccomp,
            L::ReadOnlyView,
            L::SignalScope,
            L::NoNewPrivs,
            L::ProcessCeiling,
        ] {
            assert!(seven.layer(name).unwrap().applied, "{name:?}");
        }
        let three = describe_on(&Profile::default(), LandlockSupport { abi: 3 }, full);
        assert_eq!(
            line(&three, L::Network),
            "network: not applied: Landlock ABI 3 cannot restrict TCP (needs 4)"
        );
        assert_eq!(
            line(&three, L::SignalScope),
            "signal scope: not applied: Landlock ABI 3 cannot scope signals (needs 6)"
        );
        let open = Profile {
            network: true,
            max_memory_bytes: Some(1 << 30),
            ..Profile::default()
        };
        let open = describe_on(&open, LandlockSupport { abi: 7 }, full);
        assert_eq!(
            line(&open, L::Network),
            "network: not applied: the profile allows the network (--network)"
        );
        assert_eq!(
            line(&open, L::MemoryCeiling),
            "memory ceiling: applied (RLIMIT_DATA 1 GiB)"
        );
        let none = Profile {
            backend: Backend::None,
            ..Profile::default()
        };
        let none = describe_on(&none, LandlockSupport { abi: 7 }, full);
        assert_eq!(
            line(&none, L::LandlockFs),
            "Landlock fs: not applied: sandbox backend none confines nothing"
        );
        let root = describe_on(
            &Profile::default(),
            LandlockSupport { abi: 7 },
            HostSupport {
                read_only_view: false,
                process_ceiling: false,
                root: true,
            },
        );
        assert!(!root.layer(L::ReadOnlyView).unwrap().applied);
        assert!(line(&root, L::ProcessCeiling).contains("not applied: running as root"));
        // Root-only files in the readable folders are the child's too (it
        // had said only the process ceiling: /etc/shadow was readable).
        assert!(
            root.warnings.iter().any(|w| w.contains("/etc/shadow")),
            "{:?}",
            root.warnings
        );
        for l in seven.layers.iter().chain(&three.layers).chain(&none.layers) {
            assert!(!l.detail.is_empty(), "{l:?}");
        }
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
                    root: false,
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

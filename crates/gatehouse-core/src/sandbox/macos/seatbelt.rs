//! The macOS Seatbelt profile of one child, as SBPL text for
//! `sandbox-exec -p` (what Chrome and Codex run their children under),
//! built from the same [`Profile`] as every other backend by one pure
//! function, [`profile_text`], so its tests run on every system.
//!
//! The policy: deny by default; read (and execute) the system folders
//! ([`SYSTEM_READ`]), the command's runtime paths and the profile's
//! read-only paths; read and write its scratch and the profile's read-write
//! paths only; no network unless the profile allows it (all of it, or TCP
//! connects to its listed ports); signals only within its own sandbox; a
//! short list of system services (user and group lookups, logging). The
//! user's home is not listed, so it is out of reach but for what the
//! profile names. Paths are matched after symlinks are resolved (macOS's
//! `/tmp` is `/private/tmp`): the caller passes resolved paths.
//!
//! What it does not cover, said in the status ([`NOT_COVERED`]): metadata
//! (names, sizes, times) of files anywhere stays readable, as path lookups
//! by every runtime need it.

use std::fmt::Write as _;
use std::path::{Path, PathBuf};

use crate::error::{Error, Result, codes};
use crate::sandbox::probe::{Isolation, Layer, LayerName, common_layers};
use crate::sandbox::profile::{Backend, Profile};

/// Folders (and files) every child may read and execute from. `/etc`,
/// `/var` and `/tmp` are symlinks into `/private`, listed resolved.
pub const SYSTEM_READ: &[&str] = &[
    "/usr",
    "/bin",
    "/sbin",
    "/System",
    "/Library/Apple",
    "/Library/Frameworks",
    "/Library/Preferences",
    "/opt/homebrew",
    "/private/etc",
    "/private/var/db/timezone",
    "/private/var/db/dyld",
    "/dev/urandom",
    "/dev/random",
    "/dev/null",
    "/dev/zero",
];

/// Device files every child may write.
pub const SYSTEM_WRITE: &[&str] = &["/dev/null", "/dev/zero"];

/// System services (mach names) every child may look up: user and group
/// lookups (getpwuid), the system log, notifications.
pub const SERVICES: &[&str] = &[
    "com.apple.system.opendirectoryd.libinfo",
    "com.apple.system.logger",
    "com.apple.system.notification_center",
    "com.apple.logd",
];

/// What a network-allowed child may also look up: name resolution and the
/// system's certificate trust (TLS).
pub const NETWORK_SERVICES: &[&str] = &[
    "com.apple.dnssd.service",
    "com.apple.mDNSResponder",
    "com.apple.trustd.agent",
    "com.apple.SecurityServer",
];

/// What the Seatbelt profile leaves open, for the status.
pub const NOT_COVERED: &str = "file metadata (names, sizes, times) outside its paths stays readable; no process ceiling beyond RLIMIT_NPROC of this user; memory and CPU are held by the watchdog, not the kernel; a process that detaches itself (a double fork and setsid) between the watchdog's polls can outlive the connection, still under Seatbelt but no longer watched (macOS has no subreaper)";

/// The paths one child's profile names, resolved by the caller.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Paths {
    /// Its scratch directory (read-write).
    pub scratch: PathBuf,
    /// What its command needs to start (read-only): program, prefix, script.
    pub runtime: Vec<PathBuf>,
    /// The profile's `--allow-read` paths.
    pub read_only: Vec<PathBuf>,
    /// The profile's `--allow-write` paths.
    pub read_write: Vec<PathBuf>,
}

/// `path` as an SBPL string literal: in double quotes, with `"` and `\`
/// escaped by a backslash; any other character, non-ASCII included, as
/// itself (SBPL strings are UTF-8). A path that is not valid UTF-8 or holds
/// a control character (a newline would end a line of the profile in the
/// middle of a rule) is refused.
pub fn quote(path: &Path) -> Result<String> {
    let text = path.to_str().ok_or_else(|| {
        Error::invalid(
            codes::SANDBOX_PROFILE_INVALID,
            format!(
                "the path {} is not valid UTF-8, which a Seatbelt profile cannot name",
                path.display()
            ),
            "rename the folder, or grant a folder above it",
        )
    })?;
    if let Some(c) = text.chars().find(|c| c.is_control()) {
        return Err(Error::invalid(
            codes::SANDBOX_PROFILE_INVALID,
            format!(
                "the path {text:?} holds the control character {c:?}, which a Seatbelt profile cannot name safely"
            ),
            "rename the file or folder without control characters",
        ));
    }
    let mut out = String::with_capacity(text.len() + 2);
    out.push('"');
    for c in text.chars() {
        if c == '"' || c == '\\' {
            out.push('\\');
        }
        out.push(c);
    }
    out.push('"');
    Ok(out)
}

/// `(subpath "…")` for each path, one per line.
fn subpaths<'a>(paths: impl IntoIterator<Item = &'a Path>) -> Result<String> {
    let mut out = String::new();
    for p in paths {
        writeln!(out, "  (subpath {})", quote(p)?).expect("writing to a String");
    }
    Ok(out)
}

/// The Seatbelt profile (SBPL) for a child of `profile` with `paths`.
pub fn profile_text(profile: &Profile, paths: &Paths) -> Result<String> {
    let mut t = String::from(
        "(version 1)\n\
         (deny default)\n\
         (allow process-fork)\n\
         (allow process-exec)\n\
         (allow signal (target same-sandbox))\n\
         (allow process-info* (target same-sandbox))\n\
         (allow sysctl-read)\n\
         (allow file-read-metadata)\n",
    );
    t.push_str("(allow file-read*\n");
    t.push_str(&subpaths(SYSTEM_READ.iter().map(Path::new))?);
    t.push_str(&subpaths(
        paths
            .runtime
            .iter()
            .chain(&paths.read_only)
            .map(PathBuf::as_path),
    )?);
    t.push_str(")\n(allow file-read* file-write*\n");
    t.push_str(&subpaths(
        [paths.scratch.as_path()]
            .into_iter()
            .chain(paths.read_write.iter().map(PathBuf::as_path)),
    )?);
    t.push_str(")\n(allow file-write-data\n");
    for p in SYSTEM_WRITE {
        writeln!(t, "  (literal {})", quote(Path::new(p))?).expect("writing to a String");
    }
    t.push_str(")\n(allow mach-lookup\n");
    let services = SERVICES
        .iter()
        .chain(if profile.network || !profile.connect_ports.is_empty() {
            NETWORK_SERVICES
        } else {
            &[]
        });
    for s in services {
        writeln!(t, "  (global-name \"{s}\")").expect("writing to a String");
    }
    t.push_str(")\n");
    if profile.network {
        t.push_str("(allow network*)\n");
    } else if !profile.connect_ports.is_empty() {
        t.push_str("(allow network-outbound\n");
        for port in &profile.connect_ports {
            writeln!(t, "  (remote tcp \"*:{port}\")").expect("writing to a String");
        }
        t.push_str(")\n");
    }
    Ok(t)
}

/// The `sandbox-exec` arguments that run `program args` under `text`.
pub fn wrap(text: &str, program: &str, args: &[String]) -> Vec<String> {
    let mut a = vec!["-p".to_string(), text.to_string(), program.to_string()];
    a.extend(args.iter().cloned());
    a
}

/// What the macOS backend applies for `profile` (see `macos::describe`),
/// `launcher` telling whether `/usr/bin/sandbox-exec` exists: pure, so the
/// status of every profile is tested on every system.
pub fn status(profile: &Profile, launcher: bool) -> Isolation {
    use LayerName as L;
    let mut warnings = Vec::new();
    let mut layers = Vec::new();
    let seatbelt = profile.backend == Backend::Seatbelt && launcher;
    let why_not = match profile.backend {
        Backend::Seatbelt if !launcher => {
            warnings.push(
                "/usr/bin/sandbox-exec is missing: connecting fails until it is back".to_string(),
            );
            "/usr/bin/sandbox-exec is missing".to_string()
        }
        Backend::Seatbelt => String::new(),
        Backend::None => {
            warnings.push(
                "sandbox backend none: the server can reach anything this user can".to_string(),
            );
            "sandbox backend none confines nothing".to_string()
        }
        other => {
            warnings.push(format!(
                "the {} backend does not exist on macOS: connecting fails until the connection uses seatbelt or none",
                other.as_str()
            ));
            format!("the {} backend does not exist on macOS", other.as_str())
        }
    };
    if profile.backend == Backend::Seatbelt {
        warnings.push(format!("Seatbelt does not cover: {NOT_COVERED}"));
    }
    layers.push(Layer::either(
        L::Seatbelt,
        seatbelt,
        "deny by default; reads: system, runtime and listed paths; writes: scratch and listed paths",
        why_not.clone(),
    ));
    // `(allow network*)` opens UNIX sockets with the rest of the network.
    let network = !seatbelt || profile.network;
    layers.push(if !network {
        Layer::applied(
            L::Network,
            match profile.connect_ports.as_slice() {
                [] => "refused by Seatbelt".to_string(),
                ports => format!(
                    "refused by Seatbelt but TCP connect to port {}",
                    ports
                        .iter()
                        .map(u16::to_string)
                        .collect::<Vec<_>>()
                        .join(", ")
                ),
            },
        )
    } else if seatbelt {
        Layer::not_applied(L::Network, "the profile allows the network (--network)")
    } else {
        Layer::not_applied(L::Network, why_not.clone())
    });
    let unix_sockets = network;
    layers.push(if !unix_sockets {
        Layer::applied(L::UnixSockets, "refused by Seatbelt")
    } else if seatbelt {
        Layer::not_applied(L::UnixSockets, "allowed with the network (--network)")
    } else {
        Layer::not_applied(L::UnixSockets, why_not)
    });
    layers.push(Layer::not_applied(
        L::MemoryCeiling,
        "macOS enforces no data-size limit in the kernel",
    ));
    layers.push(Layer::applied(
        L::OpenFiles,
        format!("{} per process", profile.max_open_files()),
    ));
    layers.extend(common_layers(
        profile,
        Layer::applied(
            L::ProcessCeiling,
            format!(
                "{} processes (RLIMIT_NPROC above this user's count)",
                profile.max_processes()
            ),
        ),
    ));
    Isolation {
        backend: profile.backend.as_str(),
        landlock_abi: 0,
        read_only_view: false,
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

#[cfg(test)]
mod tests {
    use super::*;
    use LayerName as L;

    /// Every layer Seatbelt applies is named, and what it cannot is said
    /// with its reason: a missing launcher, the none backend, `--network`.
    #[test]
    fn the_macos_status_names_each_layer_and_why_one_did_not_apply() {
        let seatbelt = Profile {
            backend: Backend::Seatbelt,
            ..Profile::default()
        };
        let full = status(&seatbelt, true);
        let line = |iso: &Isolation, name| iso.layer(name).unwrap().line();
        assert!(line(&full, L::Seatbelt).starts_with("Seatbelt: applied (deny by default"));
        assert_eq!(
            line(&full, L::Network),
            "network: applied (refused by Seatbelt)"
        );
        assert_eq!(
            line(&full, L::UnixSockets),
            "UNIX sockets: applied (refused by Seatbelt)"
        );
        assert!(!full.network && !full.unix_sockets);
        assert_eq!(
            line(&full, L::MemoryCeiling),
            "memory ceiling: not applied: macOS enforces no data-size limit in the kernel"
        );
        // What teardown may miss is said too: a daemon that detached between
        // polls goes to launchd (only the module's doc had said so).
        assert!(
            full.warnings
                .iter()
                .any(|w| w.starts_with("Seatbelt does not cover")
                    && w.contains("outlive the connection")),
            "{:?}",
            full.warnings
        );
        let ports = status(
            &Profile {
                connect_ports: vec![443],
                ..seatbelt.clone()
            },
            true,
        );
        assert_eq!(
            line(&ports, L::Network),
            "network: applied (refused by Seatbelt but TCP connect to port 443)"
        );
        assert_eq!(ports.connect_ports, vec![443]);
        let open = status(
            &Profile {
                network: true,
                ..seatbelt.clone()
            },
            true,
        );
        assert!(
            open.network && open.unix_sockets,
            "network* opens UNIX sockets too"
        );
        assert_eq!(
            line(&open, L::UnixSockets),
            "UNIX sockets: not applied: allowed with the network (--network)"
        );
        let missing = status(&seatbelt, false);
        assert!(!missing.layer(L::Seatbelt).unwrap().applied);
        assert!(missing.network, "no launcher: nothing refuses the network");
        assert!(missing.warnings[0].contains("sandbox-exec is missing"));
        let none = status(
            &Profile {
                backend: Backend::None,
                ..Profile::default()
            },
            true,
        );
        assert_eq!(
            line(&none, L::Network),
            "network: not applied: sandbox backend none confines nothing"
        );
        for l in full.layers.iter().chain(&none.layers) {
            assert!(!l.detail.is_empty(), "{l:?}");
        }
    }

    fn paths() -> Paths {
        Paths {
            scratch: "/Users/ada/Library/Caches/gatehouse/scratch/c-1".into(),
            runtime: vec!["/opt/homebrew/bin/node".into()],
            read_only: Vec::new(),
            read_write: Vec::new(),
        }
    }

    /// The rule that starts with `head`, up to the next rule.
    fn block_with<'a>(text: &'a str, head: &str) -> &'a str {
        let at = text
            .find(head)
            .unwrap_or_else(|| panic!("{head} in\n{text}"));
        let end = text[at + 1..]
            .find("\n(")
            .map_or(text.len(), |i| at + 1 + i);
        text[at..end].trim_end()
    }

    #[test]
    fn a_default_profile_denies_by_default_and_opens_no_network() {
        let text = profile_text(&Profile::default(), &paths()).unwrap();
        assert!(text.starts_with("(version 1)\n(deny default)\n"), "{text}");
        assert!(!text.contains("network"), "{text}");
        assert!(!text.contains("dnssd"), "{text}");
        // Scratch is the one read-write folder; the home is nowhere but in it.
        let rw = block_with(&text, "(allow file-read* file-write*");
        assert_eq!(
            rw,
            "(allow file-read* file-write*\n  (subpath \"/Users/ada/Library/Caches/gatehouse/scratch/c-1\")\n)"
        );
        assert_eq!(text.matches("/Users/ada").count(), 1, "{text}");
        // System folders and the runtime are read-only.
        let ro = block_with(&text, "(allow file-read*\n");
        assert!(ro.contains("(subpath \"/usr\")"), "{ro}");
        assert!(ro.contains("(subpath \"/opt/homebrew/bin/node\")"), "{ro}");
        assert!(!ro.contains("file-write"), "{ro}");
        // Writes to devices only where listed.
        let dev = block_with(&text, "(allow file-write-data");
        assert!(dev.contains("(literal \"/dev/null\")"), "{dev}");
        assert!(!dev.contains("urandom"), "{dev}");
        // Every parenthesis closes.
        assert_eq!(text.matches('(').count(), text.matches(')').count());
    }

    #[test]
    fn network_is_all_or_the_listed_ports() {
        let all = Profile {
            network: true,
            ..Profile::default()
        };
        let text = profile_text(&all, &paths()).unwrap();
        assert!(text.contains("\n(allow network*)\n"), "{text}");
        assert!(text.contains("com.apple.dnssd.service"), "{text}");
        let ports = Profile {
            connect_ports: vec![443, 5432],
            ..Profile::default()
        };
        let text = profile_text(&ports, &paths()).unwrap();
        assert!(!text.contains("(allow network*)"), "{text}");
        assert_eq!(
            block_with(&text, "(allow network-outbound"),
            "(allow network-outbound\n  (remote tcp \"*:443\")\n  (remote tcp \"*:5432\")\n)"
        );
    }

    #[test]
    fn allowed_paths_land_in_their_own_rules() {
        let p = Paths {
            read_only: vec!["/Users/ada/data".into()],
            read_write: vec!["/Users/ada/site".into()],
            ..paths()
        };
        let text = profile_text(&Profile::default(), &p).unwrap();
        assert!(block_with(&text, "(allow file-read*\n").contains("(subpath \"/Users/ada/data\")"));
        let rw = block_with(&text, "(allow file-read* file-write*");
        assert!(rw.contains("(subpath \"/Users/ada/site\")"), "{rw}");
        assert!(!rw.contains("/Users/ada/data"), "{rw}");
    }

    /// A path with a quote, a backslash, spaces and non-ASCII stays one
    /// string literal: it cannot end the string and add a rule of its own.
    #[test]
    fn hostile_paths_are_quoted_not_spliced() {
        let tricky =
            Path::new("/Users/zoë/My \"Sites\") (allow default) (x \\ \u{1F600}/こんにちは");
        assert_eq!(
            quote(tricky).unwrap(),
            "\"/Users/zoë/My \\\"Sites\\\") (allow default) (x \\\\ \u{1F600}/こんにちは\""
        );
        let p = Paths {
            read_write: vec![tricky.to_path_buf()],
            ..paths()
        };
        let text = profile_text(&Profile::default(), &p).unwrap();
        // Read back as SBPL's reader would: outside string literals, no
        // `(allow default)` appears.
        let mut outside = String::new();
        let mut in_string = false;
        let mut escaped = false;
        for c in text.chars() {
            if in_string {
                if escaped {
                    escaped = false;
                } else if c == '\\' {
                    escaped = true;
                } else if c == '"' {
                    in_string = false;
                }
            } else if c == '"' {
                in_string = true;
            } else {
                outside.push(c);
            }
        }
        assert!(!in_string, "every string closes: {text}");
        assert!(!outside.contains("allow default"), "{outside}");
        assert_eq!(outside.matches('(').count(), outside.matches(')').count());
    }

    #[test]
    fn control_characters_are_refused() {
        for bad in ["/tmp/a\nb", "/tmp/a\rb", "/tmp/a\u{7}b"] {
            let e = quote(Path::new(bad)).unwrap_err();
            assert_eq!(e.code, codes::SANDBOX_PROFILE_INVALID, "{bad:?}");
            assert!(e.hint.is_some());
        }
    }

    #[test]
    fn the_command_follows_the_profile() {
        let a = wrap(
            "(version 1)",
            "/usr/bin/python3",
            &["-m".into(), "srv".into()],
        );
        assert_eq!(a, ["-p", "(version 1)", "/usr/bin/python3", "-m", "srv"]);
    }
}

//! The Landlock layer and the paths a command needs.
//!
//! [`probe`] says once per process what the kernel offers. [`runtime_paths`]
//! finds what a command must read to start: its program (resolved on the
//! child's `PATH`, symlinks followed), the installation prefix of a program
//! outside the system directories (a venv, a pyenv or nvm interpreter), a
//! script's `#!` interpreter, and an interpreter's script with its folder (and
//! its `node_modules` root). [`ruleset`] builds, in the host, the ruleset the
//! child applies to itself just before `exec` (see `child.rs`): read-only
//! system paths, those runtime paths and the profile's, read-write scratch and
//! the profile's, TCP per profile (ABI ≥ 4), signals and abstract sockets
//! scoped (ABI ≥ 6). Landlock also stops ptrace-class access (`/proc/PID/environ`,
//! `/proc/PID/mem`) to processes outside the child's domain, the host included.

use std::fs;
use std::path::{Path, PathBuf};
use std::sync::OnceLock;

use landlock::{
    ABI, Access, AccessFs, AccessNet, NetPort, PathBeneath, PathFd, Ruleset, RulesetAttr,
    RulesetCreated, RulesetCreatedAttr, Scope,
};
use serde::Serialize;

use super::profile::{Backend, Profile};
use crate::error::{Error, Result, codes};

/// System folders every child may read and execute from.
pub const SYSTEM_READ_ONLY: &[&str] = &[
    "/usr",
    "/bin",
    "/sbin",
    "/lib",
    "/lib32",
    "/lib64",
    "/libx32",
    "/etc",
    "/opt",
    "/nix/store",
    "/proc",
    "/sys",
    "/dev/urandom",
    "/dev/random",
    "/run/systemd/resolve",
];

/// Device files every child may write (and read).
pub const SYSTEM_READ_WRITE: &[&str] = &["/dev/null", "/dev/zero", "/dev/full"];

/// What the kernel offers.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub struct LandlockSupport {
    /// Highest Landlock ABI found (0: none).
    pub abi: u8,
}

impl LandlockSupport {
    pub fn available(&self) -> bool {
        self.abi > 0
    }
    pub fn network(&self) -> bool {
        self.abi >= 4
    }
}

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

/// Asks the kernel once per process which Landlock ABI it offers (0: none,
/// or Landlock compiled in but not enabled at boot).
pub fn probe() -> LandlockSupport {
    static SUPPORT: OnceLock<LandlockSupport> = OnceLock::new();
    *SUPPORT.get_or_init(|| LandlockSupport { abi: kernel_abi() })
}

/// `landlock_create_ruleset(NULL, 0, LANDLOCK_CREATE_RULESET_VERSION)`: the
/// kernel's ABI version, or an error (ENOSYS, EOPNOTSUPP) when it has none.
#[allow(unsafe_code)]
fn kernel_abi() -> u8 {
    const LANDLOCK_CREATE_RULESET_VERSION: nix::libc::c_long = 1;
    // SAFETY: a raw system call with a null attribute pointer and size 0, as
    // the version query requires; it reads and writes no memory of ours.
    let v = unsafe {
        nix::libc::syscall(
            nix::libc::SYS_landlock_create_ruleset,
            std::ptr::null::<u8>(),
            0 as nix::libc::size_t,
            LANDLOCK_CREATE_RULESET_VERSION,
        )
    };
    v.clamp(0, u8::MAX as nix::libc::c_long) as u8
}

/// Finds `program` the way `exec` will: as given when it holds a `/`,
/// else in the directories of `path` (the child's `PATH`).
pub fn resolve_program(program: &str, path: &str) -> Option<PathBuf> {
    if program.contains('/') {
        let p = PathBuf::from(program);
        return p.exists().then_some(p);
    }
    path.split(':')
        .filter(|d| !d.is_empty())
        .map(|d| Path::new(d).join(program))
        .find(|p| p.is_file())
}

fn is_system(path: &Path) -> bool {
    SYSTEM_READ_ONLY
        .iter()
        .any(|s| path.starts_with(s) && *s != "/proc" && *s != "/sys")
}

/// The folder above a `bin/` folder holding `exe` (a venv, an interpreter's
/// install prefix), when `exe` is outside the system folders.
fn install_prefix(exe: &Path) -> Option<PathBuf> {
    let dir = exe.parent()?;
    if is_system(exe) {
        return None;
    }
    if dir.file_name().is_some_and(|n| n == "bin") {
        dir.parent().map(Path::to_path_buf)
    } else {
        Some(dir.to_path_buf())
    }
}

fn shebang(path: &Path) -> Option<PathBuf> {
    let mut head = [0u8; 256];
    let n = {
        use std::io::Read;
        fs::File::open(path).ok()?.read(&mut head).ok()?
    };
    let text = std::str::from_utf8(head.get(..n)?.strip_prefix(b"#!")?).ok()?;
    let first = text.lines().next()?.split_whitespace().next()?;
    Some(PathBuf::from(first))
}

/// Folders a guess of [`runtime_paths`] must never open whole: the site,
/// Gatehouse's config folder (its audit signing key) and the user's home.
/// An attack run's script lay in a folder that also held the site and the
/// config, and a symlinked interpreter's "install prefix" was the home.
pub fn protected_paths(site: Option<&Path>) -> Vec<PathBuf> {
    let mut out: Vec<PathBuf> = site.map(Path::to_path_buf).into_iter().collect();
    out.extend(crate::host_env::config_dir().ok());
    out.extend(std::env::var_os("HOME").map(PathBuf::from));
    out.into_iter()
        .map(|p| p.canonicalize().unwrap_or(p))
        .collect()
}

/// [`runtime_paths`] without any folder that is, or holds, a protected path
/// (see [`protected_paths`]); files (the program, its script) stay.
pub fn guarded_runtime_paths(
    program: &str,
    args: &[String],
    path: &str,
    protected: &[PathBuf],
) -> Vec<PathBuf> {
    runtime_paths(program, args, path)
        .into_iter()
        .filter(|p| {
            let opens_protected = p.is_dir() && protected.iter().any(|q| q.starts_with(p));
            if opens_protected {
                tracing::warn!(
                    path = %p.display(),
                    "not granting a folder that holds the site, the config or the home; grant what the server needs with --allow-read"
                );
            }
            !opens_protected
        })
        .collect()
}

/// What the command needs to read to start (see the module doc).
pub fn runtime_paths(program: &str, args: &[String], path: &str) -> Vec<PathBuf> {
    let mut out = Vec::new();
    let mut exes = Vec::new();
    if let Some(p) = resolve_program(program, path) {
        exes.push(p.clone());
        if let Ok(real) = p.canonicalize() {
            exes.push(real.clone());
            if let Some(interp) = shebang(&real) {
                exes.push(interp.clone());
                if let Ok(r) = interp.canonicalize() {
                    exes.push(r);
                }
            }
        }
    }
    for exe in &exes {
        out.push(exe.clone());
        out.extend(install_prefix(exe));
    }
    // An interpreter's script: the first argument naming an existing file.
    if let Some(script) = args
        .iter()
        .filter(|a| !a.starts_with('-'))
        .map(PathBuf::from)
        .find(|p| p.is_absolute() && p.is_file())
    {
        if let Some(dir) = script.parent() {
            out.push(dir.to_path_buf());
        }
        out.push(script.clone());
        // A package inside node_modules needs the whole tree beside it.
        let comps: Vec<_> = script.components().collect();
        if let Some(i) = comps.iter().position(|c| c.as_os_str() == "node_modules") {
            out.push(comps[..i + 1].iter().collect());
        }
    }
    out.sort();
    out.dedup();
    out
}

fn add_path(
    ruleset: RulesetCreated,
    path: &Path,
    access: landlock::BitFlags<AccessFs>,
) -> Result<RulesetCreated> {
    let Ok(meta) = fs::metadata(path) else {
        return Ok(ruleset); // absent here: nothing to allow
    };
    let access = if meta.is_dir() {
        access
    } else {
        access & AccessFs::from_file(RULESET_ABI)
    };
    let Ok(fd) = PathFd::new(path) else {
        return Ok(ruleset);
    };
    ruleset
        .add_rule(PathBeneath::new(fd, access))
        .map_err(landlock_error)
}

fn landlock_error(e: impl std::fmt::Display) -> Error {
    Error::new(
        codes::SPAWN_FAILED,
        format!("could not build the Landlock ruleset: {e}"),
    )
}

/// The Landlock ABI whose rights the ruleset handles (the crate drops what
/// the kernel lacks); the scratch tmpfs's rule grants the same
/// ([`super::view::ReadOnlyView::grant_scratch`]).
pub(crate) const RULESET_ABI: ABI = ABI::V6;

/// Builds the ruleset for a child of `profile` running in `scratch`; `None`
/// when the kernel has no Landlock (the caller says so and runs without it).
pub fn ruleset(
    profile: &Profile,
    scratch: &Path,
    runtime: &[PathBuf],
) -> Result<Option<RulesetCreated>> {
    if !probe().available() {
        return Ok(None);
    }
    let abi = RULESET_ABI;
    let read = AccessFs::from_read(abi);
    let all = AccessFs::from_all(abi);
    let mut base = Ruleset::default()
        .handle_access(all)
        .map_err(landlock_error)?
        .scope(Scope::from_all(abi))
        .map_err(landlock_error)?;
    if !profile.network {
        // Handled: no TCP connect or bind but to the listed ports.
        base = base
            .handle_access(AccessNet::from_all(abi))
            .map_err(landlock_error)?;
    }
    let mut r = base.create().map_err(landlock_error)?;
    if !profile.network {
        for port in &profile.connect_ports {
            r = r
                .add_rule(NetPort::new(*port, AccessNet::ConnectTcp))
                .map_err(landlock_error)?;
        }
    }
    for p in SYSTEM_READ_ONLY {
        r = add_path(r, Path::new(p), read)?;
    }
    for p in SYSTEM_READ_WRITE {
        r = add_path(r, Path::new(p), read | AccessFs::WriteFile)?;
    }
    for p in runtime.iter().chain(&profile.read_only) {
        r = add_path(r, p, read)?;
    }
    for p in profile
        .read_write
        .iter()
        .map(PathBuf::as_path)
        .chain([scratch])
    {
        r = add_path(r, p, all)?;
    }
    Ok(Some(r))
}

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

    #[test]
    fn runtime_paths_cover_the_program_its_prefix_and_its_script() {
        let tmp = tempfile::tempdir().unwrap();
        let bin = tmp.path().join("venv/bin");
        fs::create_dir_all(&bin).unwrap();
        fs::write(bin.join("tool"), "#!/bin/sh\n").unwrap();
        let pkg = tmp.path().join("app/node_modules/pkg/dist");
        fs::create_dir_all(&pkg).unwrap();
        fs::write(pkg.join("index.js"), "").unwrap();
        let script = pkg.join("index.js").to_string_lossy().into_owned();
        let paths = runtime_paths("tool", &["--flag".into(), script], &bin.to_string_lossy());
        assert!(paths.contains(&bin.join("tool")));
        assert!(paths.contains(&tmp.path().join("venv")), "{paths:?}");
        assert!(paths.contains(&PathBuf::from("/bin/sh")));
        assert!(paths.contains(&pkg));
        assert!(paths.contains(&tmp.path().join("app/node_modules")));
        // System programs need nothing beyond the system folders.
        assert!(install_prefix(Path::new("/usr/bin/python3")).is_none());
    }

    /// A script beside the site, or an interpreter whose prefix is the home:
    /// only the files are granted, never the folder that holds what is protected.
    #[test]
    fn guessed_folders_never_hold_the_site_the_config_or_the_home() {
        let tmp = tempfile::tempdir().unwrap();
        let root = tmp.path().canonicalize().unwrap();
        let site = root.join("site");
        fs::create_dir_all(&site).unwrap();
        let script = root.join("server.py");
        fs::write(&script, "").unwrap();
        let home = root.join("home");
        fs::create_dir_all(home.join("bin")).unwrap();
        fs::write(home.join("bin/python3"), "#!/bin/sh\n").unwrap();
        let args = [script.to_string_lossy().into_owned()];
        let protected = [site.clone(), home.clone()];
        let bin = home.join("bin");
        let paths = guarded_runtime_paths("python3", &args, &bin.to_string_lossy(), &protected);
        assert!(!paths.contains(&root), "{paths:?}");
        assert!(!paths.contains(&home), "{paths:?}");
        assert!(paths.contains(&script), "{paths:?}");
        assert!(paths.contains(&bin.join("python3")), "{paths:?}");
        // Without anything protected there, the folders are granted as before.
        let open = guarded_runtime_paths("python3", &args, &bin.to_string_lossy(), &[]);
        assert!(open.contains(&root) && open.contains(&home), "{open:?}");
    }
}

//! The bubblewrap backend: the command runs under `bwrap` with a private mount
//! namespace that holds only the system folders (read-only), the command's
//! runtime paths and the profile's paths, and its scratch directory
//! (read-write); its own PID, IPC, UTS, user and (unless the profile allows
//! the network) network namespaces; no capabilities (`--cap-drop ALL`, which
//! matters where root runs it); and `--die-with-parent`, so the whole
//! namespace dies with the host, even a host killed with SIGKILL.

use std::path::{Path, PathBuf};

use super::landlock::SYSTEM_READ_ONLY;
use crate::error::{Error, Result, codes};
use crate::sandbox::profile::Profile;
use crate::sandbox::runtime::resolve_program;
use crate::sandbox::spec::DEFAULT_PATH;

/// The `bwrap` binary, from the system folders only.
pub fn find() -> Result<PathBuf> {
    resolve_program("bwrap", DEFAULT_PATH).ok_or_else(|| {
        Error::invalid(
            codes::SANDBOX_UNAVAILABLE,
            "the connection asks for the bwrap backend, but bwrap is not installed",
            "install bubblewrap (apt-get install bubblewrap), or choose --sandbox landlock",
        )
    })
}

/// `bwrap` arguments that run `program args` confined (see the module doc).
pub fn wrap(
    profile: &Profile,
    scratch: &Path,
    runtime: &[PathBuf],
    program: &str,
    args: &[String],
) -> Vec<String> {
    // No capabilities inside, whoever starts bwrap: run by root it keeps
    // them all (a child had remounted /etc read-write and written to the
    // host's); unprivileged it has none to drop, and the flag is harmless.
    let mut a: Vec<String> = ["--die-with-parent", "--unshare-all", "--cap-drop", "ALL"]
        .map(String::from)
        .to_vec();
    if profile.network {
        a.push("--share-net".into());
    }
    // The fresh /dev, /proc and /tmp first: a bind below /tmp (a scratch root
    // in $TMPDIR, a profile path) must land on top of the tmpfs, not under it.
    a.extend(["--dev", "/dev", "--proc", "/proc", "--tmpfs", "/tmp"].map(String::from));
    let mut bind = |flag: &str, p: &Path| {
        if p.exists() {
            a.extend([
                flag.into(),
                p.display().to_string(),
                p.display().to_string(),
            ]);
        }
    };
    for p in SYSTEM_READ_ONLY
        .iter()
        .filter(|p| !p.starts_with("/proc") && !p.starts_with("/dev"))
    {
        bind("--ro-bind", Path::new(p));
    }
    for p in runtime.iter().chain(&profile.read_only) {
        bind("--ro-bind", p);
    }
    for p in profile
        .read_write
        .iter()
        .map(PathBuf::as_path)
        .chain([scratch])
    {
        bind("--bind", p);
    }
    a.push("--chdir".into());
    a.push(scratch.display().to_string());
    a.push("--".into());
    a.push(program.into());
    a.extend(args.iter().cloned());
    a
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn binds_come_after_the_fresh_tmp_they_may_sit_in() {
        let tmp = tempfile::tempdir().unwrap();
        let scratch = tmp.path().to_string_lossy().into_owned();
        let args = wrap(
            &Profile::default(),
            tmp.path(),
            &[],
            "python3",
            &["a".into()],
        );
        let at = |s: &str| args.iter().position(|a| a == s).unwrap();
        assert!(at("--tmpfs") < at(&scratch), "{args:?}");
        assert!(!args.contains(&"--share-net".to_string()));
        assert_eq!(&args[args.len() - 3..], ["--", "python3", "a"]);
    }
}

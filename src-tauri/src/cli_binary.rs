//! Finds the `gatehouse` CLI that generated client configs start.
//!
//! A config must name the CLI (`gatehouse mcp`), not this desktop binary, by an
//! absolute path that outlives this process. In order:
//! 1. `GATEHOUSE_BIN`, for installs that keep the two apart;
//! 2. on Linux, inside an AppImage (the runtime sets `APPIMAGE` and `APPDIR`,
//!    and this binary lies under `APPDIR`): the bundled CLI sits in the
//!    runtime's per-version extraction, which a newer AppImage or a cleaned
//!    cache replaces, so it is copied to a stable per-user path
//!    ([`stable_cli_path`]) and that path is named;
//! 3. the sibling of `gatehouse-desktop`: `/usr/bin/gatehouse` from the .deb;
//!    `%LOCALAPPDATA%\Programs\Gatehouse\gatehouse.exe` from the Windows
//!    installer; `Gatehouse.app/Contents/MacOS/gatehouse` in the macOS bundle
//!    (Tauri's `externalBin` puts it there); `target/{debug,release}` after
//!    `cargo build --workspace`.

use std::ffi::OsString;
use std::path::{Path, PathBuf};

use gatehouse_core::client_config;
use gatehouse_core::error::{Error, Result, codes};

/// Environment variable naming the `gatehouse` binary explicitly.
pub const ENV_BIN: &str = "GATEHOUSE_BIN";

const CLI_NAME: &str = "gatehouse";

/// The absolute path of the `gatehouse` CLI, or `CLI_BINARY_NOT_FOUND`.
pub fn locate() -> Result<PathBuf> {
    let exe = std::env::current_exe()
        .map_err(|e| Error::new(codes::IO_ERROR, format!("cannot locate this program: {e}")))?;
    let appimage = AppImage::from_env(&exe);
    locate_from(std::env::var_os(ENV_BIN), &exe, appimage.as_ref())
}

/// Where an AppImage's CLI is kept for configs: `$XDG_DATA_HOME/gatehouse/bin/
/// gatehouse`, else `~/.local/share/gatehouse/bin/gatehouse`. It is refreshed
/// whenever the app locates the CLI (at start, for the About view, and for
/// each generated config), so a newer AppImage replaces an older copy.
pub fn stable_cli_path() -> Option<PathBuf> {
    let data = std::env::var_os("XDG_DATA_HOME")
        .map(PathBuf::from)
        .filter(|p| p.is_absolute())
        .or_else(|| std::env::var_os("HOME").map(|h| PathBuf::from(h).join(".local/share")))?;
    Some(data.join("gatehouse/bin").join(CLI_NAME))
}

/// This process runs from inside an AppImage: the CLI to copy, and where to.
#[derive(Debug)]
struct AppImage {
    stable: PathBuf,
}

impl AppImage {
    /// `APPIMAGE`/`APPDIR` are inherited by anything the app starts, so they
    /// count only when this binary really lies under `APPDIR`. AppImages are
    /// a Linux format: elsewhere the variables mean nothing.
    fn from_env(exe: &Path) -> Option<Self> {
        if !cfg!(target_os = "linux") {
            return None;
        }
        Self::from_vars(
            std::env::var_os("APPIMAGE"),
            std::env::var_os("APPDIR"),
            exe,
            stable_cli_path(),
        )
    }

    fn from_vars(
        appimage: Option<OsString>,
        appdir: Option<OsString>,
        exe: &Path,
        stable: Option<PathBuf>,
    ) -> Option<Self> {
        appimage.filter(|v| !v.is_empty())?;
        let appdir = PathBuf::from(appdir.filter(|v| !v.is_empty())?);
        exe.starts_with(&appdir).then_some(Self { stable: stable? })
    }
}

/// [`locate`] with its inputs given.
/// Where the candidate binary came from: the user's choice is used as it
/// is; the desktop app's own sibling is copied out of an AppImage mount.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Source {
    /// [`ENV_BIN`] names it.
    EnvVar,
    /// It sits next to the desktop app's binary.
    Sibling,
}

impl Source {
    fn describe(self) -> String {
        match self {
            Source::EnvVar => format!("{ENV_BIN} names"),
            Source::Sibling => "expected next to the desktop app at".to_string(),
        }
    }
}

fn locate_from(
    env_bin: Option<OsString>,
    exe: &Path,
    appimage: Option<&AppImage>,
) -> Result<PathBuf> {
    let sibling = exe.with_file_name(format!("{CLI_NAME}{}", std::env::consts::EXE_SUFFIX));
    let (candidate, source) = match env_bin.filter(|v| !v.is_empty()) {
        Some(path) => (PathBuf::from(path), Source::EnvVar),
        None => (sibling, Source::Sibling),
    };
    if !candidate.is_file() {
        return Err(Error::invalid(
            codes::CLI_BINARY_NOT_FOUND,
            format!(
                "the gatehouse CLI was not found: {} {}",
                source.describe(),
                candidate.display()
            ),
            format!(
                "build it with `cargo build --workspace` (it lands next to gatehouse-desktop), \
                 or set {ENV_BIN} to the absolute path of an installed gatehouse"
            ),
        ));
    }
    match appimage {
        Some(app) if source == Source::Sibling => {
            install_copy(&candidate, &app.stable)?;
            client_config::client_path(&app.stable)
        }
        _ => client_config::client_path(&candidate),
    }
}

/// Puts `from` at `to` unless an identical file is there: written beside it
/// and renamed over it, so a client starting the old copy never sees half a
/// file.
fn install_copy(from: &Path, to: &Path) -> Result<()> {
    let io = |what: &str, path: &Path, e: std::io::Error| {
        Error::invalid(
            codes::IO_ERROR,
            format!("cannot {what} {}: {e}", path.display()),
            format!(
                "the AppImage keeps the gatehouse CLI at {} for client configs; \
                 make that folder writable, or set {ENV_BIN} to an installed gatehouse",
                to.display()
            ),
        )
    };
    let new = std::fs::read(from).map_err(|e| io("read", from, e))?;
    if std::fs::read(to).is_ok_and(|old| old == new) {
        return Ok(());
    }
    let dir = to.parent().unwrap_or(Path::new("."));
    std::fs::create_dir_all(dir).map_err(|e| io("create", dir, e))?;
    // Unique per call too: the About view and a config can locate at once.
    static NEXT: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);
    let n = NEXT.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
    let tmp = dir.join(format!(".{CLI_NAME}.{}.{n}.tmp", std::process::id()));
    let written = std::fs::write(&tmp, &new).and_then(|()| {
        #[cfg(unix)]
        {
            use std::os::unix::fs::PermissionsExt;
            std::fs::set_permissions(&tmp, std::fs::Permissions::from_mode(0o755))?;
        }
        std::fs::rename(&tmp, to)
    });
    written.map_err(|e| {
        let _ = std::fs::remove_file(&tmp);
        io("write", to, e)
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn dir_with(files: &[&str]) -> tempfile::TempDir {
        let dir = tempfile::tempdir().unwrap();
        for file in files {
            std::fs::write(dir.path().join(file), "").unwrap();
        }
        dir
    }

    #[test]
    fn finds_the_sibling_of_the_desktop_binary() {
        let dir = dir_with(&["gatehouse-desktop", "gatehouse"]);
        let found = locate_from(None, &dir.path().join("gatehouse-desktop"), None).unwrap();
        assert_eq!(found, dir.path().join("gatehouse").canonicalize().unwrap());
        assert!(found.is_absolute());
    }

    #[test]
    fn the_environment_wins_over_the_sibling() {
        let app = dir_with(&["gatehouse-desktop", "gatehouse"]);
        let other = dir_with(&["my-gatehouse"]);
        let named = other.path().join("my-gatehouse");
        let found = locate_from(
            Some(named.clone().into_os_string()),
            &app.path().join("gatehouse-desktop"),
            None,
        )
        .unwrap();
        assert_eq!(found, named.canonicalize().unwrap());
    }

    #[test]
    fn a_missing_binary_is_a_clear_error() {
        let dir = dir_with(&["gatehouse-desktop"]);
        let err = locate_from(None, &dir.path().join("gatehouse-desktop"), None).unwrap_err();
        assert_eq!(err.code, codes::CLI_BINARY_NOT_FOUND);
        assert!(
            err.message.contains("next to the desktop app"),
            "{}",
            err.message
        );
        assert!(err.hint.unwrap().contains(ENV_BIN));

        let err = locate_from(
            Some(dir.path().join("nope").into_os_string()),
            &dir.path().join("gatehouse-desktop"),
            None,
        )
        .unwrap_err();
        assert_eq!(err.code, codes::CLI_BINARY_NOT_FOUND);
        assert!(err.message.contains(ENV_BIN), "{}", err.message);
    }

    #[test]
    fn an_appimage_names_a_stable_copy_not_its_mount() {
        let mount = dir_with(&["gatehouse-desktop"]);
        std::fs::write(mount.path().join("gatehouse"), "cli v1").unwrap();
        let home = tempfile::tempdir().unwrap();
        let app = AppImage {
            stable: home.path().join("gatehouse/bin/gatehouse"),
        };
        let exe = mount.path().join("gatehouse-desktop");

        let found = locate_from(None, &exe, Some(&app)).unwrap();
        assert_eq!(found, app.stable.canonicalize().unwrap());
        assert!(!found.starts_with(mount.path()), "{}", found.display());
        assert_eq!(std::fs::read(&found).unwrap(), b"cli v1");
        #[cfg(unix)]
        {
            use std::os::unix::fs::PermissionsExt;
            let mode = std::fs::metadata(&found).unwrap().permissions().mode();
            assert_eq!(mode & 0o777, 0o755);
        }

        // A newer AppImage refreshes the copy; no scratch file is left behind.
        std::fs::write(mount.path().join("gatehouse"), "cli v2").unwrap();
        locate_from(None, &exe, Some(&app)).unwrap();
        assert_eq!(std::fs::read(&app.stable).unwrap(), b"cli v2");
        let names: Vec<_> = std::fs::read_dir(app.stable.parent().unwrap())
            .unwrap()
            .map(|e| e.unwrap().file_name())
            .collect();
        assert_eq!(names, vec![std::ffi::OsString::from("gatehouse")]);
    }

    #[test]
    fn concurrent_locates_in_an_appimage_each_succeed_with_a_whole_copy() {
        let mount = dir_with(&["gatehouse-desktop"]);
        let body = vec![7u8; 4 << 20];
        std::fs::write(mount.path().join("gatehouse"), &body).unwrap();
        let home = tempfile::tempdir().unwrap();
        let app = AppImage {
            stable: home.path().join("bin/gatehouse"),
        };
        let exe = mount.path().join("gatehouse-desktop");
        std::thread::scope(|s| {
            let runs: Vec<_> = (0..8)
                .map(|_| s.spawn(|| locate_from(None, &exe, Some(&app))))
                .collect();
            for run in runs {
                run.join().unwrap().unwrap();
            }
        });
        assert_eq!(std::fs::read(&app.stable).unwrap(), body);
        let names = std::fs::read_dir(app.stable.parent().unwrap())
            .unwrap()
            .count();
        assert_eq!(names, 1, "scratch copies left behind");
    }

    #[test]
    fn inside_an_appimage_the_environment_still_wins() {
        let mount = dir_with(&["gatehouse-desktop", "gatehouse"]);
        let other = dir_with(&["my-gatehouse"]);
        let home = tempfile::tempdir().unwrap();
        let app = AppImage {
            stable: home.path().join("bin/gatehouse"),
        };
        let named = other.path().join("my-gatehouse");
        let found = locate_from(
            Some(named.clone().into_os_string()),
            &mount.path().join("gatehouse-desktop"),
            Some(&app),
        )
        .unwrap();
        assert_eq!(found, named.canonicalize().unwrap());
        assert!(!app.stable.exists());
    }

    #[test]
    fn appimage_variables_count_only_for_a_binary_under_appdir() {
        let stable = Some(PathBuf::from(
            "/home/u/.local/share/gatehouse/bin/gatehouse",
        ));
        let inside = Path::new("/tmp/.mount_Gateh1/usr/bin/gatehouse-desktop");
        let vars = |a: &str, d: &str| (Some(OsString::from(a)), Some(OsString::from(d)));

        let (a, d) = vars("/home/u/Gatehouse.AppImage", "/tmp/.mount_Gateh1");
        assert!(AppImage::from_vars(a, d, inside, stable.clone()).is_some());
        // Inherited by the .deb app started from an AppImage's terminal: ignored.
        let (a, d) = vars("/home/u/Gatehouse.AppImage", "/tmp/.mount_Gateh1");
        let installed = Path::new("/usr/bin/gatehouse-desktop");
        assert!(AppImage::from_vars(a, d, installed, stable.clone()).is_none());
        // Only one of the two variables, or an empty one: not an AppImage.
        assert!(
            AppImage::from_vars(
                None,
                Some("/tmp/.mount_Gateh1".into()),
                inside,
                stable.clone()
            )
            .is_none()
        );
        let (a, d) = vars("", "/tmp/.mount_Gateh1");
        assert!(AppImage::from_vars(a, d, inside, stable).is_none());
    }
}

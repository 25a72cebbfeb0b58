//! The paths a command needs to read to start, whatever confines it.
//!
//! [`runtime_paths`] finds its program (resolved on the child's `PATH`,
//! symlinks followed), the installation prefix of a program outside the
//! system directories (a venv, a pyenv or nvm interpreter), a script's `#!`
//! interpreter, and an interpreter's script with its folder (and its
//! `node_modules` root). [`guarded_runtime_paths`] drops any guessed folder
//! that holds the site, the config or the home. Each backend grants the
//! result its own way (a Landlock rule, a bwrap bind, a Seatbelt `subpath`).

use std::fs;
use std::path::{Path, PathBuf};

use super::os::SYSTEM_READ_ONLY;

/// Finds `program` the way `exec` will: as given when it holds a `/`,
/// else in the directories of `path` (the child's `PATH`).
pub fn resolve_program(program: &str, path: &str) -> Option<PathBuf> {
    if program.contains('/') || (cfg!(windows) && program.contains('\\')) {
        let p = PathBuf::from(program);
        return p.exists().then_some(p);
    }
    std::env::split_paths(path)
        .filter(|d| !d.as_os_str().is_empty())
        .map(|d| d.join(program))
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

#[cfg(all(test, unix))]
mod tests {
    use super::*;

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

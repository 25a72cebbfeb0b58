//! The runtime as an AppImage uses it: the built binary with a real squashfs
//! (made by `mksquashfs`, zstd, as scripts/package.sh makes it) appended,
//! started as a child process with a private HOME.
#![cfg(target_os = "linux")]

use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};

const RUNTIME: &str = env!("CARGO_BIN_EXE_gatehouse-appimage-runtime");

/// An AppDir whose AppRun reports what it was given, and notes in its own
/// folder that it ran (so a second start can tell it got the same copy).
fn app_dir(root: &Path, version: &str) -> PathBuf {
    let dir = root.join(format!("AppDir-{version}"));
    std::fs::create_dir_all(dir.join("usr/bin")).unwrap();
    std::fs::create_dir_all(dir.join("usr/share/data")).unwrap();
    let apprun = dir.join("AppRun");
    std::fs::write(
        &apprun,
        r#"#!/bin/sh
here=$(dirname "$(readlink -f "$0")")
[ -e "$here/ran-before" ] && echo "ran before" || echo "first run"
touch "$here/ran-before"
echo "args:$*"
echo "APPIMAGE=$APPIMAGE"
echo "APPDIR=$APPDIR"
echo "ARGV0=$ARGV0"
exec "$here/usr/bin/tool"
"#,
    )
    .unwrap();
    let tool = dir.join("usr/bin/tool");
    std::fs::write(&tool, format!("#!/bin/sh\necho tool {version}\n")).unwrap();
    for exe in [&apprun, &tool] {
        std::fs::set_permissions(exe, std::fs::Permissions::from_mode(0o755)).unwrap();
    }
    // Several blocks of data that do not compress (xorshift), so the copy crosses
    // blocks and a fragment, and the image is mostly this file.
    let mut x = 0x2545_f491_u32;
    let data: Vec<u8> = (0..300_000)
        .map(|_| {
            x ^= x << 13;
            x ^= x >> 17;
            x ^= x << 5;
            x as u8
        })
        .collect();
    std::fs::write(dir.join("usr/share/data/blob"), data).unwrap();
    std::os::unix::fs::symlink("usr/bin/tool", dir.join("tool-link")).unwrap();
    dir
}

/// The runtime followed by a squashfs of `dir`.
fn image(root: &Path, dir: &Path, name: &str) -> PathBuf {
    let sqfs = root.join(format!("{name}.sqfs"));
    let out = Command::new("mksquashfs")
        .arg(dir)
        .arg(&sqfs)
        .args(["-comp", "zstd", "-root-owned", "-noappend", "-quiet"])
        .output()
        .expect("mksquashfs (squashfs-tools, installed by scripts/setup.sh)");
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let mut bytes = std::fs::read(RUNTIME).unwrap();
    bytes.extend(std::fs::read(&sqfs).unwrap());
    let image = root.join(name);
    std::fs::write(&image, bytes).unwrap();
    std::fs::set_permissions(&image, std::fs::Permissions::from_mode(0o755)).unwrap();
    image
}

/// `image` with `args`, a clean environment and `home`.
fn command(image: &Path, home: &Path, args: &[&str]) -> Command {
    let mut c = Command::new(image);
    c.args(args)
        .env_clear()
        .env("PATH", "/usr/bin:/bin")
        .env("HOME", home);
    c
}

/// Starts `image`, retried on `ETXTBSY` ("text file busy"): another test
/// thread's fork can still hold the image's write descriptor (inherited, not
/// yet closed by its exec) just after `image` wrote it.
fn retrying<T>(mut run: impl FnMut() -> std::io::Result<T>) -> T {
    let mut tries = 0;
    loop {
        match run() {
            Err(e) if e.kind() == std::io::ErrorKind::ExecutableFileBusy && tries < 100 => {
                tries += 1;
                std::thread::sleep(std::time::Duration::from_millis(20));
            }
            result => return result.unwrap(),
        }
    }
}

/// Runs `image` to its end.
fn start(image: &Path, home: &Path, args: &[&str]) -> Output {
    retrying(|| command(image, home, args).output())
}

fn text(out: &Output) -> String {
    assert!(
        out.status.success(),
        "exit {:?}: {}",
        out.status,
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8(out.stdout.clone()).unwrap()
}

/// The names in the runtime's cache root.
fn cached(home: &Path) -> Vec<String> {
    let root = home.join(".cache/gatehouse/appimage");
    let mut names: Vec<String> = std::fs::read_dir(root)
        .map(|d| {
            d.map(|e| e.unwrap().file_name().into_string().unwrap())
                .collect()
        })
        .unwrap_or_default();
    names.sort();
    names
}

#[test]
fn runs_apprun_from_the_extracted_copy_with_arguments_and_the_appimage_variables() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = app_dir(tmp.path(), "1");
    let image = image(tmp.path(), &dir, "App-1.AppImage");
    let home = tmp.path().join("home");
    std::fs::create_dir(&home).unwrap();

    let out = text(&start(&image, &home, &["gatehouse", "--version", "a b"]));
    let names = cached(&home);
    assert_eq!(names.len(), 1, "{names:?}");
    let appdir = home.join(".cache/gatehouse/appimage").join(&names[0]);
    assert_eq!(
        out,
        format!(
            "first run\nargs:gatehouse --version a b\nAPPIMAGE={}\nAPPDIR={}\nARGV0={}\ntool 1\n",
            image.display(),
            appdir.display(),
            image.display()
        )
    );

    // Every file as it was packed: contents, modes and the link.
    for file in ["AppRun", "usr/bin/tool", "usr/share/data/blob"] {
        assert_eq!(
            std::fs::read(appdir.join(file)).unwrap(),
            std::fs::read(dir.join(file)).unwrap(),
            "{file}"
        );
        let mode = |p: PathBuf| std::fs::metadata(p).unwrap().permissions().mode() & 0o777;
        assert_eq!(mode(appdir.join(file)), mode(dir.join(file)), "{file}");
    }
    assert_eq!(
        std::fs::read_link(appdir.join("tool-link")).unwrap(),
        PathBuf::from("usr/bin/tool")
    );
}

#[test]
fn a_second_start_reuses_the_copy_and_a_new_version_gets_its_own() {
    let tmp = tempfile::tempdir().unwrap();
    let home = tmp.path().join("home");
    std::fs::create_dir(&home).unwrap();
    let v1 = image(tmp.path(), &app_dir(tmp.path(), "1"), "App-1.AppImage");
    assert!(text(&start(&v1, &home, &[])).starts_with("first run\n"));
    // The option upstream runtimes use to skip FUSE means the same here.
    let again = text(&start(&v1, &home, &["--appimage-extract-and-run", "x"]));
    assert!(again.starts_with("ran before\nargs:x\n"), "{again}");
    assert_eq!(cached(&home).len(), 1);

    let v2 = image(tmp.path(), &app_dir(tmp.path(), "2"), "App-2.AppImage");
    let out = text(&start(&v2, &home, &[]));
    assert!(
        out.starts_with("first run\n") && out.ends_with("tool 2\n"),
        "{out}"
    );
    assert_eq!(cached(&home).len(), 2, "one copy per version");
}

#[test]
fn concurrent_first_starts_share_one_complete_copy() {
    let tmp = tempfile::tempdir().unwrap();
    let home = tmp.path().join("home");
    std::fs::create_dir(&home).unwrap();
    let image = image(tmp.path(), &app_dir(tmp.path(), "1"), "App.AppImage");
    let children: Vec<_> = (0..4)
        .map(|_| {
            retrying(|| {
                command(&image, &home, &[])
                    .stdout(std::process::Stdio::piped())
                    .stderr(std::process::Stdio::piped())
                    .spawn()
            })
        })
        .collect();
    for child in children {
        let out = child.wait_with_output().unwrap();
        assert!(text(&out).ends_with("tool 1\n"));
    }
    let names = cached(&home);
    assert_eq!(
        names.len(),
        1,
        "one copy, no scratch folder left: {names:?}"
    );
}

#[test]
fn the_offset_option_names_where_the_squashfs_starts() {
    let tmp = tempfile::tempdir().unwrap();
    let image = image(tmp.path(), &app_dir(tmp.path(), "1"), "App.AppImage");
    let out = text(&start(&image, tmp.path(), &["--appimage-offset"]));
    let runtime_len = std::fs::metadata(RUNTIME).unwrap().len();
    assert_eq!(out, format!("{runtime_len}\n"));
    let magic = &std::fs::read(&image).unwrap()[runtime_len as usize..][..4];
    assert_eq!(magic, b"hsqs", "a squashfs superblock starts there");
}

#[test]
fn a_truncated_image_fails_with_a_hint_and_leaves_no_copy() {
    let tmp = tempfile::tempdir().unwrap();
    let home = tmp.path().join("home");
    std::fs::create_dir(&home).unwrap();
    let image = image(tmp.path(), &app_dir(tmp.path(), "1"), "App.AppImage");
    // Cut inside what the superblock says the squashfs uses (bytes_used, at 40),
    // not merely in the padding after it.
    let runtime_len = std::fs::metadata(RUNTIME).unwrap().len();
    let bytes = std::fs::read(&image).unwrap();
    let at = runtime_len as usize + 40;
    let used = u64::from_le_bytes(bytes[at..at + 8].try_into().unwrap());
    assert!(used > 300_000, "the image holds the blob: {used}");
    let file = std::fs::OpenOptions::new()
        .write(true)
        .open(&image)
        .unwrap();
    file.set_len(runtime_len + used / 2).unwrap();
    drop(file);

    let out = start(&image, &home, &["gatehouse"]);
    assert_eq!(out.status.code(), Some(127));
    assert!(out.stdout.is_empty(), "AppRun must not run");
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(stderr.contains("damaged or incomplete"), "{stderr}");
    assert_eq!(
        cached(&home),
        Vec::<String>::new(),
        "nothing half-extracted stays"
    );
}

#[test]
fn an_unknown_appimage_option_is_refused_by_name() {
    let tmp = tempfile::tempdir().unwrap();
    let image = image(tmp.path(), &app_dir(tmp.path(), "1"), "App.AppImage");
    let out = start(&image, tmp.path(), &["--appimage-mount"]);
    assert_eq!(out.status.code(), Some(127));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.contains("--appimage-mount is not an option"),
        "{stderr}"
    );
    assert!(stderr.contains("--appimage-extract-and-run"), "{stderr}");
}

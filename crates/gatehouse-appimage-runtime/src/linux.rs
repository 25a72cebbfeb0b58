//! The runtime on Linux: find the squashfs, extract it once per version, run `AppRun`.

use std::ffi::OsString;
use std::fs::File;
use std::io::{BufReader, Read, Seek, SeekFrom};
use std::os::unix::fs::{DirBuilderExt, OpenOptionsExt, PermissionsExt};
use std::os::unix::process::CommandExt;
use std::path::{Component, Path, PathBuf};
use std::process::ExitCode;

use backhand::{FilesystemReader, InnerNode};
use sha2::{Digest, Sha256};

/// A failure, told to the person who started the AppImage.
#[derive(Debug)]
pub struct Error {
    message: String,
    hint: String,
}

type Result<T> = std::result::Result<T, Error>;

fn fail(message: impl Into<String>, hint: impl Into<String>) -> Error {
    Error {
        message: message.into(),
        hint: hint.into(),
    }
}

pub fn main() -> ExitCode {
    let mut args = std::env::args_os();
    let argv0 = args.next().unwrap_or_default();
    let args: Vec<OsString> = args.collect();
    match run(argv0, args) {
        Ok(code) => code,
        Err(e) => {
            eprintln!("Gatehouse AppImage: {}\nhint: {}", e.message, e.hint);
            // 127, as a shell reports a program it could not start.
            ExitCode::from(127)
        }
    }
}

fn run(argv0: OsString, mut args: Vec<OsString>) -> Result<ExitCode> {
    let image = std::env::current_exe().map_err(|e| {
        fail(
            format!("cannot find this AppImage's own file: {e}"),
            "start it by its path on a mounted file system",
        )
    })?;
    let offset = {
        let mut file = open(&image)?;
        let mut head = [0u8; 64];
        file.read_exact(&mut head)
            .map_err(|e| fail(format!("cannot read {}: {e}", image.display()), DAMAGED))?;
        elf_end(&head)?
    };
    match args.first().and_then(|a| a.to_str()) {
        Some("--appimage-offset") => {
            println!("{offset}");
            return Ok(ExitCode::SUCCESS);
        }
        Some("--appimage-extract-and-run") => {
            args.remove(0);
        }
        Some(option) if option.starts_with("--appimage-") => {
            return Err(fail(
                format!("{option} is not an option of Gatehouse's AppImage runtime"),
                "it knows --appimage-offset and --appimage-extract-and-run (what it always \
                 does: extract once per version to the user's cache folder and run from there)",
            ));
        }
        _ => {}
    }
    let cache = dirs::cache_dir().ok_or_else(|| {
        fail(
            "no cache folder: neither XDG_CACHE_HOME nor HOME is set",
            "set HOME (or XDG_CACHE_HOME) to a writable folder",
        )
    })?;
    let appdir = cache_dir(&image, offset, &cache.join("gatehouse/appimage"))?;
    let apprun = appdir.join("AppRun");
    let mut command = std::process::Command::new(&apprun);
    command.arg0(&apprun).args(&args);
    command.env("APPIMAGE", &image).env("APPDIR", &appdir);
    command.env("ARGV0", &argv0);
    if let Ok(cwd) = std::env::current_dir() {
        command.env("OWD", cwd);
    }
    // Only returns on failure.
    let e = command.exec();
    Err(fail(
        format!("cannot start {}: {e}", apprun.display()),
        format!("remove {} and start the AppImage again", appdir.display()),
    ))
}

const DAMAGED: &str = "the AppImage file is damaged or incomplete: download it again";

fn open(path: &Path) -> Result<File> {
    File::open(path).map_err(|e| fail(format!("cannot open {}: {e}", path.display()), DAMAGED))
}

/// Where this ELF program ends, which is where the squashfs starts: the end of
/// its section header table, the last thing a linker (and `strip`) writes.
/// 64-bit little-endian only, which covers the x86_64 and aarch64 AppImages.
///
/// Hand-written (a dozen lines) rather than with an ELF crate: three fields of
/// the fixed header are all it needs.
pub fn elf_end(head: &[u8]) -> Result<u64> {
    if head.len() < 64 || &head[..4] != b"\x7fELF" {
        return Err(fail("this file does not start with an ELF header", DAMAGED));
    }
    if head[4] != 2 || head[5] != 1 {
        return Err(fail(
            "this AppImage's runtime is not a 64-bit little-endian ELF program",
            "use the AppImage built for this machine's architecture",
        ));
    }
    let u64_at = |at: usize| u64::from_le_bytes(head[at..at + 8].try_into().expect("8 bytes"));
    let u16_at = |at: usize| u64::from(u16::from_le_bytes([head[at], head[at + 1]]));
    // e_shoff at 0x28, e_shentsize at 0x3a, e_shnum at 0x3c.
    let end = u64_at(0x28).checked_add(u16_at(0x3a) * u16_at(0x3c));
    end.filter(|&end| end >= 64)
        .ok_or_else(|| fail("this AppImage's ELF header is inconsistent", DAMAGED))
}

/// The extracted copy of the squashfs at `offset` in `image`: `root/<digest>`,
/// extracted first if it is not there. The digest (SHA-256 of the squashfs's
/// bytes) names the version, so a new AppImage never runs an older copy and a
/// copy is never changed once in place.
pub fn cache_dir(image: &Path, offset: u64, root: &Path) -> Result<PathBuf> {
    let digest = payload_digest(image, offset)?;
    let dir = root.join(&digest[..24]);
    if dir.join("AppRun").exists() {
        return Ok(dir);
    }
    let unwritable = |what: &str, path: &Path, e: std::io::Error| {
        fail(
            format!("cannot {what} {}: {e}", path.display()),
            format!(
                "the AppImage runs from a copy under {}: make that folder writable \
                 (or point XDG_CACHE_HOME at a writable one)",
                root.display()
            ),
        )
    };
    std::fs::DirBuilder::new()
        .recursive(true)
        .mode(0o700)
        .create(root)
        .map_err(|e| unwritable("create", root, e))?;
    // Extracted beside its final name and renamed into place when complete, so
    // a start that is cut short (or a second one at the same time) never runs
    // half a copy; the scratch folder of an interrupted start is removed by
    // the next one of the same version.
    let scratch = root.join(format!(".{}.{}.tmp", &digest[..24], std::process::id()));
    remove_stale_scratch(root, &digest[..24]);
    let extracted = extract(image, offset, &scratch);
    if let Err(e) = extracted {
        let _ = std::fs::remove_dir_all(&scratch);
        return Err(e);
    }
    match std::fs::rename(&scratch, &dir) {
        Ok(()) => Ok(dir),
        // Another start of the same version won the race: use its copy.
        Err(_) if dir.join("AppRun").exists() => {
            let _ = std::fs::remove_dir_all(&scratch);
            Ok(dir)
        }
        Err(e) => {
            let _ = std::fs::remove_dir_all(&scratch);
            Err(unwritable("rename into", &dir, e))
        }
    }
}

/// Removes scratch folders of `digest` left by starts whose process is gone.
fn remove_stale_scratch(root: &Path, digest: &str) {
    let Ok(entries) = std::fs::read_dir(root) else {
        return;
    };
    let prefix = format!(".{digest}.");
    for entry in entries.flatten() {
        let name = entry.file_name();
        let Some(pid) = name
            .to_str()
            .and_then(|n| n.strip_prefix(&prefix))
            .and_then(|n| n.strip_suffix(".tmp"))
        else {
            continue;
        };
        if !Path::new("/proc").join(pid).exists() {
            let _ = std::fs::remove_dir_all(entry.path());
        }
    }
}

/// Hex SHA-256 of `image` from `offset` to its end.
fn payload_digest(image: &Path, offset: u64) -> Result<String> {
    let mut file = open(image)?;
    file.seek(SeekFrom::Start(offset))
        .map_err(|e| fail(format!("cannot read {}: {e}", image.display()), DAMAGED))?;
    let mut hasher = Sha256::new();
    let mut buf = vec![0u8; 1 << 20];
    loop {
        let n = file
            .read(&mut buf)
            .map_err(|e| fail(format!("cannot read {}: {e}", image.display()), DAMAGED))?;
        if n == 0 {
            break;
        }
        hasher.update(&buf[..n]);
    }
    Ok(hex::encode(hasher.finalize()))
}

/// Unpacks the squashfs at `offset` in `image` into `dest` (which must not
/// exist): folders, regular files and symbolic links, with their permission
/// bits less set-id and sticky bits. Device nodes, pipes and sockets, and any
/// path that would land outside `dest`, are refused.
pub fn extract(image: &Path, offset: u64, dest: &Path) -> Result<()> {
    let damaged =
        |e: &dyn std::fmt::Display| fail(format!("cannot read the AppImage's files: {e}"), DAMAGED);
    let reader = BufReader::new(open(image)?);
    let fs = FilesystemReader::from_reader_with_offset(reader, offset).map_err(|e| damaged(&e))?;
    let write = |what: &str, path: &Path, e: std::io::Error| {
        fail(
            format!("cannot {what} {}: {e}", path.display()),
            "free some space in the cache folder, or make it writable",
        )
    };
    std::fs::DirBuilder::new()
        .mode(0o700)
        .create(dest)
        .map_err(|e| write("create", dest, e))?;
    // Folder modes are set last: a read-only folder would refuse its own files.
    let mut folders = Vec::new();
    for node in fs.files() {
        let relative = inside(&node.fullpath)?;
        let path = dest.join(&relative);
        let mode = u32::from(node.header.permissions) & 0o777;
        match &node.inner {
            InnerNode::Dir(_) => {
                if !relative.as_os_str().is_empty() {
                    std::fs::DirBuilder::new()
                        .mode(0o700)
                        .create(&path)
                        .map_err(|e| write("create", &path, e))?;
                }
                folders.push((path, mode));
            }
            InnerNode::File(file) => {
                let mut out = std::fs::OpenOptions::new()
                    .write(true)
                    .create_new(true)
                    .mode(mode)
                    .open(&path)
                    .map_err(|e| write("create", &path, e))?;
                let mut contents = fs.file(file).reader();
                let copied = std::io::copy(&mut contents, &mut out);
                let copied =
                    copied.map_err(|e| damaged(&format!("{}: {e}", node.fullpath.display())))?;
                if copied != file.file_len() as u64 {
                    return Err(damaged(&format!(
                        "{}: {copied} of {} bytes",
                        node.fullpath.display(),
                        file.file_len()
                    )));
                }
                // The umask may have narrowed the mode given at creation.
                out.set_permissions(std::fs::Permissions::from_mode(mode))
                    .map_err(|e| write("set the mode of", &path, e))?;
            }
            InnerNode::Symlink(link) => {
                std::os::unix::fs::symlink(&link.link, &path)
                    .map_err(|e| write("create the link", &path, e))?;
            }
            _ => {
                return Err(damaged(&format!(
                    "{} is a device, pipe or socket, which an AppImage does not carry",
                    node.fullpath.display()
                )));
            }
        }
    }
    for (path, mode) in folders.into_iter().rev() {
        std::fs::set_permissions(&path, std::fs::Permissions::from_mode(mode))
            .map_err(|e| write("set the mode of", &path, e))?;
    }
    Ok(())
}

/// `path` (absolute inside the image) as a path relative to the extraction
/// folder, refusing `..` and anything else that could step outside it.
fn inside(path: &Path) -> Result<PathBuf> {
    let mut relative = PathBuf::new();
    for component in path.components() {
        match component {
            Component::RootDir | Component::CurDir => {}
            Component::Normal(part) => relative.push(part),
            Component::ParentDir | Component::Prefix(_) => {
                return Err(fail(
                    format!(
                        "the AppImage names a file outside itself: {}",
                        path.display()
                    ),
                    DAMAGED,
                ));
            }
        }
    }
    Ok(relative)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn header(shoff: u64, shentsize: u16, shnum: u16) -> Vec<u8> {
        let mut head = vec![0u8; 64];
        head[..4].copy_from_slice(b"\x7fELF");
        head[4] = 2;
        head[5] = 1;
        head[0x28..0x30].copy_from_slice(&shoff.to_le_bytes());
        head[0x3a..0x3c].copy_from_slice(&shentsize.to_le_bytes());
        head[0x3c..0x3e].copy_from_slice(&shnum.to_le_bytes());
        head
    }

    #[test]
    fn the_squashfs_starts_after_the_section_headers() {
        assert_eq!(elf_end(&header(10_000, 64, 30)).unwrap(), 10_000 + 64 * 30);
    }

    #[test]
    fn this_test_binary_ends_where_its_section_headers_end() {
        // A real ELF file written by the linker: nothing follows its section
        // header table, so its end is its length.
        let exe = std::env::current_exe().unwrap();
        let bytes = std::fs::read(&exe).unwrap();
        assert_eq!(elf_end(&bytes[..64]).unwrap(), bytes.len() as u64);
    }

    #[test]
    fn a_file_that_is_not_a_64_bit_elf_is_refused() {
        assert!(elf_end(b"#!/bin/sh\n").is_err());
        let mut head = header(10_000, 64, 30);
        head[4] = 1; // 32-bit
        let e = elf_end(&head).unwrap_err();
        assert!(e.message.contains("64-bit"), "{}", e.message);
        assert!(elf_end(&header(u64::MAX, 64, 2)).is_err(), "overflow");
    }

    #[test]
    fn paths_outside_the_image_are_refused() {
        assert_eq!(
            inside(Path::new("/usr/bin/x")).unwrap(),
            PathBuf::from("usr/bin/x")
        );
        assert_eq!(inside(Path::new("/")).unwrap(), PathBuf::new());
        assert!(inside(Path::new("/usr/../../etc/passwd")).is_err());
    }
}

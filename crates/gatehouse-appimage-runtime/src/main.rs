//! The AppImage's runtime: the ELF program at the head of `Gatehouse-*.AppImage`,
//! followed by a squashfs of the app's files.
//!
//! Map (in `linux`): `elf_end` finds where this program ends and the squashfs starts;
//! `cache_dir` names the per-version folder the squashfs is extracted to
//! (a digest of its bytes); `extract` unpacks it there with `backhand`,
//! into a scratch folder renamed into place once complete; `main` then
//! replaces itself with the extracted `AppRun`, setting the variables AppImage
//! tools expect (`APPIMAGE`, `APPDIR`, `ARGV0`, `OWD`).
//!
//! Options, as the first argument: `--appimage-offset` prints the squashfs's
//! offset; `--appimage-extract-and-run` is accepted and means what this
//! runtime always does. Any other `--appimage-…` option is refused.
//!
//! # Caveats
//! No FUSE mount: every start runs from the extracted copy, so the first start
//! of a new version pays the extraction (about a second for the release image)
//! and each version keeps a copy under the user's cache folder until removed.
//! See docs/decisions.md, "The AppImage runtime".

#[cfg(target_os = "linux")]
mod linux;

#[cfg(target_os = "linux")]
fn main() -> std::process::ExitCode {
    linux::main()
}

/// An AppImage is a Linux format; the crate builds everywhere so the workspace
/// does, but the program only runs on Linux.
#[cfg(not(target_os = "linux"))]
fn main() -> std::process::ExitCode {
    eprintln!("gatehouse-appimage-runtime: an AppImage runs on Linux only");
    std::process::ExitCode::from(2)
}

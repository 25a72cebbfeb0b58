//! How the page is painted on Linux. WebKitGTK composites the page with
//! OpenGL; on a machine without a GPU that GL is Mesa's llvmpipe, a
//! rasteriser running on the CPU: a profile of the web process under ten
//! stderr floods put half its time in llvmpipe's threads, and without
//! compositing the window's frame p95 fell from 344–415 ms to 95–119 ms
//! (docs/bench.md). So without a GPU render node the page is painted without
//! compositing mode. `GATEHOUSE_WEBVIEW_GL=1` keeps compositing, `=0` drops it
//! with a GPU too; a `WEBKIT_DISABLE_COMPOSITING_MODE` the user set is left alone.

use std::path::Path;

/// WebKitGTK's own switch.
const WEBKIT_SWITCH: &str = "WEBKIT_DISABLE_COMPOSITING_MODE";
/// Ours: `1` keeps GL compositing, `0` turns it off.
pub const OVERRIDE: &str = "GATEHOUSE_WEBVIEW_GL";

/// Whether to turn compositing off, given whether a GPU render node exists
/// and the value of [`OVERRIDE`].
pub fn without_compositing(gpu: bool, choice: Option<&str>) -> bool {
    match choice.map(str::trim) {
        Some("1") => false,
        Some("0") => true,
        _ => !gpu,
    }
}

/// A DRM render node (`/dev/dri/renderD*`): a GPU the web process can use.
fn has_render_node(dri: &Path) -> bool {
    std::fs::read_dir(dri).is_ok_and(|entries| {
        entries
            .flatten()
            .any(|e| e.file_name().to_string_lossy().starts_with("renderD"))
    })
}

/// Sets WebKit's switch for this process and the web process it starts.
///
/// # Safety
/// Changes the environment: call before any other thread exists.
#[allow(unsafe_code)]
pub unsafe fn choose() {
    if std::env::var_os(WEBKIT_SWITCH).is_some() {
        return;
    }
    let choice = std::env::var(OVERRIDE).ok();
    if without_compositing(has_render_node(Path::new("/dev/dri")), choice.as_deref()) {
        // SAFETY: the caller guarantees no other thread exists yet.
        unsafe { std::env::set_var(WEBKIT_SWITCH, "1") };
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn compositing_is_off_without_a_gpu_unless_asked_for() {
        assert!(without_compositing(false, None));
        assert!(!without_compositing(true, None));
        assert!(!without_compositing(false, Some("1")));
        assert!(without_compositing(true, Some("0")));
        assert!(
            without_compositing(false, Some("yes")),
            "unknown values change nothing"
        );
    }

    #[test]
    fn a_render_node_is_a_gpu() {
        let dir = tempfile::tempdir().unwrap();
        assert!(!has_render_node(dir.path()));
        std::fs::write(dir.path().join("renderD128"), "").unwrap();
        assert!(has_render_node(dir.path()));
        assert!(!has_render_node(&dir.path().join("missing")));
    }
}

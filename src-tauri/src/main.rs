// Release builds on Windows would otherwise open a console next to the window.
#![cfg_attr(not(debug_assertions), windows_subsystem = "windows")]

#[allow(unsafe_code)]
fn main() -> anyhow::Result<()> {
    // The host's own secrets (a database URL, PGPASSWORD) out of our
    // environment before anything inherits or shows it.
    // SAFETY: no other thread exists yet.
    unsafe { gatehouse_core::host_env::take_host_secrets() };
    // Without a GPU, WebKit paints without GL compositing (see painting.rs).
    // SAFETY: as above.
    #[cfg(target_os = "linux")]
    unsafe {
        gatehouse_desktop::painting::choose()
    };
    // Core and shell log through `tracing`; stderr only, filter from GATEHOUSE_LOG.
    tracing_subscriber::fmt()
        .with_env_filter(
            tracing_subscriber::EnvFilter::try_from_env("GATEHOUSE_LOG")
                .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new("warn")),
        )
        .with_ansi(false)
        .with_writer(std::io::stderr)
        .init();
    // Non-dumpable (children cannot read our environment or memory through
    // /proc) and the subreaper of escaped descendants.
    if let Err(e) = gatehouse_core::sandbox::harden_host() {
        tracing::warn!(error = %e, "host hardening failed");
    }
    gatehouse_desktop::run()?;
    Ok(())
}

//! WebDriver end-to-end scenarios of the real desktop binary in a real
//! WebKitGTK webview, checked against the real CLI and the site's database:
//! one binary, one scenario at a time (the driver's port is fixed).
//!
//! Needs `tauri-driver` (on PATH or in ~/.cargo/bin), `WebKitWebDriver` and a
//! display, so the scenarios are `#[ignore]`d by default. Run them with:
//!
//! ```sh
//! xvfb-run -a cargo test --test e2e -- --include-ignored
//! ```
//!
//! Screenshots of every screen land in `target/e2e-screenshots/`. Linux only:
//! WebKitGTK's WebDriver is what tauri-driver drives here.
#![cfg(target_os = "linux")]

mod admin;
mod approvals;
mod client_config;
mod desk;
mod exit;
mod grants;
mod keys_reach;
mod load;
mod pinning;
mod serve;
mod serve_oauth;
mod smoke;
mod theme;
mod webdriver;

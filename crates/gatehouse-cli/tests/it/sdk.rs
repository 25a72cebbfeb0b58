//! The one harness for the tests that run an official SDK client script from
//! `tests/interop/` against the real binary: where the pinned SDKs live, the
//! skip (a failure under `CI`) when they are missing, the arguments every
//! script takes (the binary, then the site), an environment with none of the
//! caller's Gatehouse variables, and the failure report (the script's stdout
//! and stderr, and the server's log when one runs).

use std::ffi::OsStr;
use std::process::Command;

use crate::serve_util::Serve;
use crate::util::{BIN, TestSite};

#[path = "../../../../tests/interop/interop.rs"]
mod interop;
pub(crate) use interop::{interop_dir, missing};

/// One run of an SDK client script.
pub(crate) struct SdkClient {
    cmd: Command,
}

impl SdkClient {
    /// The Python SDK (`tests/interop/.venv`) running `script` against
    /// `site`, or `None` after the skip notice when it is not installed.
    pub(crate) fn python(script: &str, site: &TestSite) -> Option<SdkClient> {
        let python = interop_dir().join(".venv/bin/python");
        if missing("the Python MCP SDK (tests/interop/.venv)", python.exists()) {
            return None;
        }
        Some(SdkClient::new(Command::new(python), script, site))
    }

    /// The TypeScript SDK (`tests/interop/node_modules`, run by `node`)
    /// running `script` against `site`, or `None` after the skip notice.
    pub(crate) fn node(script: &str, site: &TestSite) -> Option<SdkClient> {
        let sdk = interop_dir().join("node_modules/@modelcontextprotocol/sdk/package.json");
        let node = Command::new("node").arg("--version").output().is_ok();
        if missing(
            "the TypeScript MCP SDK (tests/interop/node_modules) or node",
            sdk.exists() && node,
        ) {
            return None;
        }
        Some(SdkClient::new(Command::new("node"), script, site))
    }

    fn new(mut cmd: Command, script: &str, site: &TestSite) -> SdkClient {
        cmd.arg(script)
            .arg(BIN)
            .arg(site.path())
            .current_dir(interop_dir())
            .env("GATEHOUSE_CONFIG_DIR", site.config_dir())
            .env_remove("GATEHOUSE_API_KEY")
            .env_remove("GATEHOUSE_SITE");
        SdkClient { cmd }
    }

    /// One more argument after the binary and the site.
    pub(crate) fn arg(mut self, arg: impl AsRef<OsStr>) -> SdkClient {
        self.cmd.arg(arg);
        self
    }

    pub(crate) fn env(mut self, key: &str, value: impl AsRef<OsStr>) -> SdkClient {
        self.cmd.env(key, value);
        self
    }

    pub(crate) fn env_remove(mut self, key: &str) -> SdkClient {
        self.cmd.env_remove(key);
        self
    }

    /// Runs the script to its end and fails the test unless it succeeded;
    /// returns its stdout (also printed, for the test's own output).
    pub(crate) fn run(self) -> String {
        self.finish(None)
    }

    /// As [`SdkClient::run`], with `serve`'s log in the failure report.
    pub(crate) fn run_against(self, serve: &Serve) -> String {
        self.finish(Some(serve))
    }

    fn finish(mut self, serve: Option<&Serve>) -> String {
        let out = self.cmd.output().expect("the interop client runs");
        let stdout = String::from_utf8_lossy(&out.stdout).into_owned();
        println!("{stdout}");
        assert!(
            out.status.success(),
            "interop client failed:\n{stdout}\nstderr:\n{}{}",
            String::from_utf8_lossy(&out.stderr),
            serve
                .map(|s| format!("\nserver:\n{}", s.stderr()))
                .unwrap_or_default()
        );
        stdout
    }
}

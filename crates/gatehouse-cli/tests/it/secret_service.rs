//! The audit signing key in a real Secret Service: `gnome-keyring-daemon` on
//! a D-Bus session bus of the test's own, reached by the CLI through the
//! system credential store it uses on Linux desktops. The unit tests of
//! `secret_store` use a store in memory; this one runs the D-Bus protocol,
//! the encrypted session and separate processes.

use std::io::{BufRead, BufReader, Write};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Output, Stdio};
use std::time::{Duration, Instant};

use crate::mcp_util::PATIENCE;
use crate::util::{TestSite, failure, installed};

/// A session bus that starts no service on demand (the system's session
/// config would start a new `gnome-keyring-daemon` when one is asked for
/// after the test stopped it), listening in `DIR`, which the test removes.
const BUS_CONFIG: &str = r#"<!DOCTYPE busconfig PUBLIC "-//freedesktop//DTD D-Bus Bus Configuration 1.0//EN"
 "http://www.freedesktop.org/standards/dbus/1.0/busconfig.dtd">
<busconfig>
  <type>session</type>
  <listen>unix:dir=DIR</listen>
  <auth>EXTERNAL</auth>
  <policy context="default">
    <allow send_destination="*" eavesdrop="true"/>
    <allow eavesdrop="true"/>
    <allow own="*"/>
  </policy>
</busconfig>
"#;

/// A session bus and a Secret Service on it; dropping it kills both.
struct SecretService {
    bus: Child,
    keyring: Option<Child>,
    address: String,
    home: PathBuf,
}

impl SecretService {
    /// Starts `dbus-daemon` and an unlocked `gnome-keyring-daemon` whose
    /// keyrings live under `home`, and waits until the service owns its
    /// name on the bus.
    fn start(home: &Path) -> SecretService {
        let config = home.join("bus.conf");
        let dir = home.display().to_string();
        std::fs::write(&config, BUS_CONFIG.replace("DIR", &dir)).unwrap();
        let bus = Command::new("dbus-daemon")
            .arg(format!("--config-file={}", config.display()))
            .args(["--nofork", "--nosyslog", "--print-address=1"])
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .expect("dbus-daemon (Debian's dbus-daemon; scripts/setup.sh installs it)");
        // The guard first: whatever fails next, the bus is killed.
        let mut service = SecretService {
            bus,
            keyring: None,
            address: String::new(),
            home: home.to_path_buf(),
        };
        BufReader::new(service.bus.stdout.take().unwrap())
            .read_line(&mut service.address)
            .unwrap();
        service.address = service.address.trim().to_string();
        assert!(
            service.address.starts_with("unix:"),
            "bus address {:?}",
            service.address
        );
        let log = home.join("keyring.log");
        let keyring = service
            .env(&mut Command::new("gnome-keyring-daemon"))
            .args(["--foreground", "--unlock", "--components=secrets"])
            .stdin(Stdio::piped())
            .stdout(Stdio::null())
            .stderr(std::fs::File::create(&log).unwrap())
            .spawn()
            .expect("gnome-keyring-daemon (Debian's gnome-keyring; scripts/setup.sh installs it)");
        let keyring = service.keyring.insert(keyring);
        // The login keyring's password, then end of input: --unlock reads it so.
        let mut stdin = keyring.stdin.take().unwrap();
        stdin.write_all(b"test-password").unwrap();
        drop(stdin);
        let deadline = Instant::now() + PATIENCE;
        while !service.owned("org.freedesktop.secrets") {
            let exited = service.keyring.as_mut().unwrap().try_wait().unwrap();
            assert!(
                exited.is_none() && Instant::now() < deadline,
                "the Secret Service never appeared on the bus (gnome-keyring-daemon {}): {}",
                exited.map_or("still running".into(), |s| format!("exited with {s}")),
                std::fs::read_to_string(&log).unwrap_or_default()
            );
            std::thread::sleep(Duration::from_millis(50));
        }
        service
    }

    /// `cmd` on this bus, with `HOME` and the XDG folders under `home`.
    fn env<'a>(&self, cmd: &'a mut Command) -> &'a mut Command {
        cmd.env("DBUS_SESSION_BUS_ADDRESS", &self.address)
            .env("HOME", &self.home)
            .env("XDG_CONFIG_HOME", self.home.join(".config"))
            .env("XDG_DATA_HOME", self.home.join(".local/share"))
            .env("XDG_RUNTIME_DIR", self.home.join("run"))
    }

    /// `dbus-send` on this bus, its reply printed.
    fn send(&self, args: &[&str]) -> String {
        let out = run(self
            .env(&mut Command::new("dbus-send"))
            .args(["--session", "--print-reply"])
            .args(args));
        String::from_utf8_lossy(&out.stdout).into_owned()
    }

    /// Whether `name` has an owner on the bus.
    fn owned(&self, name: &str) -> bool {
        self.send(&[
            "--dest=org.freedesktop.DBus",
            "/org/freedesktop/DBus",
            "org.freedesktop.DBus.NameHasOwner",
            &format!("string:{name}"),
        ])
        .contains("boolean true")
    }

    /// The unlocked items filed under service `gatehouse`, account `account`,
    /// as the Secret Service itself lists them.
    fn items(&self, account: &str) -> usize {
        let reply = self.send(&[
            "--dest=org.freedesktop.secrets",
            "/org/freedesktop/secrets",
            "org.freedesktop.Secret.Service.SearchItems",
            &format!("dict:string:string:service,gatehouse,username,{account}"),
        ]);
        // Two arrays: the unlocked items' paths, then the locked ones'.
        let unlocked = reply.split("array [").nth(1).unwrap_or_default();
        let unlocked = unlocked.split(']').next().unwrap_or_default();
        unlocked.matches("object path").count()
    }

    /// Stops the Secret Service and waits until its name is gone; the bus stays.
    fn stop_keyring(&mut self) {
        self.kill_keyring();
        let deadline = Instant::now() + PATIENCE;
        while self.owned("org.freedesktop.secrets") {
            assert!(Instant::now() < deadline, "the Secret Service did not go");
            std::thread::sleep(Duration::from_millis(50));
        }
    }

    fn kill_keyring(&mut self) {
        if let Some(mut k) = self.keyring.take() {
            let _ = k.kill();
            let _ = k.wait();
        }
    }
}

impl Drop for SecretService {
    /// Kills and reaps both; nothing here can panic (a panic while the test
    /// unwinds would abort every test of this binary).
    fn drop(&mut self) {
        self.kill_keyring();
        let _ = self.bus.kill();
        let _ = self.bus.wait();
    }
}

/// Runs `cmd` to its end, within [`PATIENCE`]: a Secret Service that never
/// answers fails the test instead of hanging it.
fn run(cmd: &mut Command) -> Output {
    let child = cmd
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap_or_else(|e| panic!("starting {cmd:?}: {e}"));
    let pid = child.id() as i32;
    let (done, output) = std::sync::mpsc::channel();
    std::thread::spawn(move || done.send(child.wait_with_output()));
    match output.recv_timeout(PATIENCE) {
        Ok(out) => out.unwrap(),
        Err(_) => {
            let _ = nix::sys::signal::kill(
                nix::unistd::Pid::from_raw(pid),
                nix::sys::signal::Signal::SIGKILL,
            );
            panic!("{cmd:?} did not end within {PATIENCE:?}");
        }
    }
}

/// `gatehouse audit key` on `site` as a desktop user runs it: the config
/// folder is the user's own (no `GATEHOUSE_CONFIG_DIR`), so new secrets go
/// to the Secret Service.
fn audit_key(site: &TestSite, service: &SecretService) -> Output {
    let mut cmd = site.command();
    cmd.env_remove("GATEHOUSE_CONFIG_DIR");
    service.env(&mut cmd).args(["audit", "key"]);
    run(&mut cmd)
}

#[test]
fn the_signing_key_lives_in_the_secret_service_and_is_never_replaced_while_it_is_away() {
    if !installed(&["dbus-daemon", "dbus-send", "gnome-keyring-daemon"]) {
        return;
    }
    let site = TestSite::new("secret-service");
    let home = site.path().parent().unwrap().join("desktop-home");
    std::fs::create_dir_all(home.join("run")).unwrap();
    let mut service = SecretService::start(&home);
    let config = home.join(".config/gatehouse");
    assert_eq!(service.items("audit-signing-key"), 0);

    // First use: the key is made in the Secret Service; only its marker is on disk.
    let made = audit_key(&site, &service);
    let stderr = String::from_utf8_lossy(&made.stderr);
    assert!(made.status.success(), "{stderr}");
    assert!(
        stderr
            .contains("kept in the Secret Service (service gatehouse, account audit-signing-key)"),
        "{stderr}"
    );
    let key = String::from_utf8(made.stdout).unwrap().trim().to_string();
    assert_eq!(key.len(), 64, "{key}");
    assert_eq!(service.items("audit-signing-key"), 1);
    assert!(config.join("audit-signing-key.keychain").is_file());
    assert!(!config.join("audit-signing-key").exists());

    // A second process reads the same key back from the service.
    let again = audit_key(&site, &service);
    assert!(again.status.success());
    assert_eq!(String::from_utf8(again.stdout).unwrap().trim(), key);
    assert_eq!(service.items("audit-signing-key"), 1);

    // With the service gone the key is not replaced by a new one in a file.
    service.stop_keyring();
    let away = failure(audit_key(&site, &service), &["audit", "key"]);
    assert_eq!(away.code, "SECRET_STORE_UNAVAILABLE", "{}", away.stderr);
    assert!(!config.join("audit-signing-key").exists());
}

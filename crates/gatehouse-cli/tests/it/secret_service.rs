//! The audit signing key in a real Secret Service: `gnome-keyring-daemon` on
//! a D-Bus session bus of the test's own, reached by the CLI through the
//! system credential store it uses on Linux desktops. The unit tests of
//! `secret_store` use a store in memory; this one runs the D-Bus protocol,
//! the encrypted session and separate processes.

use std::io::{BufRead, BufReader, Write};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use crate::util::{TestSite, failure};

/// A session bus that starts no service on demand (the system's session
/// config would start a new `gnome-keyring-daemon` when one is asked for
/// after the test stopped it).
const BUS_CONFIG: &str = r#"<!DOCTYPE busconfig PUBLIC "-//freedesktop//DTD D-Bus Bus Configuration 1.0//EN"
 "http://www.freedesktop.org/standards/dbus/1.0/busconfig.dtd">
<busconfig>
  <type>session</type>
  <listen>unix:tmpdir=/tmp</listen>
  <auth>EXTERNAL</auth>
  <policy context="default">
    <allow send_destination="*" eavesdrop="true"/>
    <allow eavesdrop="true"/>
    <allow own="*"/>
  </policy>
</busconfig>
"#;

/// A session bus and a Secret Service on it, both stopped on drop.
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
        std::fs::write(&config, BUS_CONFIG).unwrap();
        let mut bus = Command::new("dbus-daemon")
            .arg(format!("--config-file={}", config.display()))
            .args(["--nofork", "--nosyslog", "--print-address=1"])
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .expect("dbus-daemon (Debian's dbus-daemon; scripts/setup.sh installs it)");
        let mut address = String::new();
        BufReader::new(bus.stdout.take().unwrap())
            .read_line(&mut address)
            .unwrap();
        let address = address.trim().to_string();
        assert!(address.starts_with("unix:"), "bus address {address:?}");
        let mut service = SecretService {
            bus,
            keyring: None,
            address,
            home: home.to_path_buf(),
        };
        let mut keyring = service
            .env(&mut Command::new("gnome-keyring-daemon"))
            .args(["--foreground", "--unlock", "--components=secrets"])
            .stdin(Stdio::piped())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .expect("gnome-keyring-daemon (Debian's gnome-keyring; scripts/setup.sh installs it)");
        // The login keyring's password, then end of input: --unlock reads it so.
        let mut stdin = keyring.stdin.take().unwrap();
        stdin.write_all(b"test-password").unwrap();
        drop(stdin);
        service.keyring = Some(keyring);
        let deadline = Instant::now() + Duration::from_secs(30);
        while !service.owned("org.freedesktop.secrets") {
            assert!(
                Instant::now() < deadline,
                "the Secret Service never appeared on the bus"
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

    /// Whether `name` has an owner on the bus.
    fn owned(&self, name: &str) -> bool {
        let out = self
            .env(&mut Command::new("dbus-send"))
            .args([
                "--session",
                "--print-reply",
                "--dest=org.freedesktop.DBus",
                "/org/freedesktop/DBus",
                "org.freedesktop.DBus.NameHasOwner",
                &format!("string:{name}"),
            ])
            .output()
            .expect("dbus-send");
        String::from_utf8_lossy(&out.stdout).contains("boolean true")
    }

    /// Stops the Secret Service; the bus stays.
    fn stop_keyring(&mut self) {
        if let Some(mut k) = self.keyring.take() {
            let _ = k.kill();
            let _ = k.wait();
        }
        let deadline = Instant::now() + Duration::from_secs(10);
        while self.owned("org.freedesktop.secrets") {
            assert!(Instant::now() < deadline, "the Secret Service did not go");
            std::thread::sleep(Duration::from_millis(50));
        }
    }
}

impl Drop for SecretService {
    fn drop(&mut self) {
        self.stop_keyring();
        let _ = self.bus.kill();
        let _ = self.bus.wait();
    }
}

/// `gatehouse` on `site` as a desktop user runs it: the config folder is the
/// user's own (no `GATEHOUSE_CONFIG_DIR`), so new secrets go to the Secret
/// Service.
fn as_desktop_user(site: &TestSite, service: &SecretService) -> Command {
    let mut cmd = site.command();
    cmd.env_remove("GATEHOUSE_CONFIG_DIR");
    service.env(&mut cmd);
    cmd
}

#[test]
fn the_signing_key_lives_in_the_secret_service_and_is_never_replaced_while_it_is_away() {
    let site = TestSite::new("secret-service");
    let home = site.path().parent().unwrap().join("desktop-home");
    std::fs::create_dir_all(home.join("run")).unwrap();
    let mut service = SecretService::start(&home);
    let config = home.join(".config/gatehouse");

    // First use: the key is made in the Secret Service; only its marker is on disk.
    let made = as_desktop_user(&site, &service)
        .args(["audit", "key"])
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&made.stderr);
    assert!(made.status.success(), "{stderr}");
    assert!(
        stderr
            .contains("kept in the Secret Service (service gatehouse, account audit-signing-key)"),
        "{stderr}"
    );
    let key = String::from_utf8(made.stdout).unwrap().trim().to_string();
    assert_eq!(key.len(), 64, "{key}");
    assert!(config.join("audit-signing-key.keychain").is_file());
    assert!(!config.join("audit-signing-key").exists());
    let on_disk: String = std::fs::read_dir(&config)
        .unwrap()
        .flatten()
        .map(|e| std::fs::read_to_string(e.path()).unwrap_or_default())
        .collect();
    // The public key is derived from the secret; neither is written out.
    assert!(!on_disk.contains(&key), "{on_disk}");

    // A second process reads the same key back from the service.
    let again = as_desktop_user(&site, &service)
        .args(["audit", "key"])
        .output()
        .unwrap();
    assert!(again.status.success());
    assert_eq!(String::from_utf8(again.stdout).unwrap().trim(), key);

    // With the service gone the key is not replaced by a new one in a file.
    service.stop_keyring();
    let away = as_desktop_user(&site, &service)
        .args(["audit", "key"])
        .output()
        .unwrap();
    let away = failure(away, &["audit", "key"]);
    assert_eq!(away.code, "SECRET_STORE_UNAVAILABLE", "{}", away.stderr);
    assert!(!config.join("audit-signing-key").exists());
}

//! Where this machine keeps a secret at rest, behind one interface with two
//! places: the system's credential store (the macOS Keychain, Windows'
//! Credential Manager, a Secret Service on Linux desktops; `keyring-core` with
//! one store crate per system), or an owner-only file in the user's config
//! directory.
//!
//! New secrets go to the credential store when one answers and the config
//! directory is the user's own; to a file otherwise (servers, CI and
//! containers have no credential store; a config directory named by
//! `GATEHOUSE_CONFIG_DIR` or passed in by a test is never the user's, so no
//! test touches a developer's real keychain), and [`SecretStore::describe`]
//! says which and why. A secret in the credential store leaves a marker file
//! with its fingerprint beside where its file would be: a later process that
//! cannot reach the credential store then fails with a clear error instead of
//! making a second secret, and an existing file always wins.

use std::io::Write;
#[cfg(unix)]
use std::os::unix::fs::{OpenOptionsExt, PermissionsExt};
use std::path::{Path, PathBuf};
use std::sync::{Arc, OnceLock};
use std::time::Duration;

use keyring_core::{CredentialStore, Entry};
use sha2::{Digest, Sha256};

use crate::error::{Error, Result, codes};
use crate::host_env::{ENV_CONFIG_DIR, default_config_dir};

/// Chooses where new secrets go: `keychain` (the system's credential store,
/// or an error where none answers) or `file`; unset, the credential store
/// where one answers.
pub const ENV_SECRET_STORE: &str = "GATEHOUSE_SECRET_STORE";
/// The service every Gatehouse secret is filed under in a credential store.
pub const SERVICE: &str = "gatehouse";
/// The marker beside a secret kept in the credential store: `NAME.keychain`.
const MARKER_SUFFIX: &str = ".keychain";
/// How long a reader waits for the process that wrote the marker to store
/// the secret itself (the two steps of a creation are not one).
const CREATION_WAIT: Duration = Duration::from_secs(3);

/// A credential store: the system's, or one a test passes in.
#[derive(Clone)]
pub struct Keychain {
    store: Arc<CredentialStore>,
    /// What the store is called for a person ("the macOS Keychain").
    name: &'static str,
}

impl std::fmt::Debug for Keychain {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "Keychain({})", self.name)
    }
}

impl Keychain {
    pub fn new(store: Arc<CredentialStore>, name: &'static str) -> Self {
        Self { store, name }
    }

    /// This system's credential store, opened once per process (on Linux the
    /// opening is a D-Bus connection), or why there is none.
    pub fn system() -> std::result::Result<Keychain, String> {
        static SYSTEM: OnceLock<std::result::Result<Keychain, String>> = OnceLock::new();
        SYSTEM.get_or_init(open_system).clone()
    }

    fn entry(&self, account: &str) -> Result<Entry> {
        Entry::new_in_store(&self.store, SERVICE, account).map_err(|e| self.failed(account, &e))
    }

    fn get(&self, account: &str) -> Result<Option<String>> {
        match self.entry(account)?.get_password() {
            Ok(v) => Ok(Some(v)),
            Err(keyring_core::Error::NoEntry) => Ok(None),
            Err(e) => Err(self.failed(account, &e)),
        }
    }

    fn set(&self, account: &str, secret: &str) -> Result<()> {
        self.entry(account)?
            .set_password(secret)
            .map_err(|e| self.failed(account, &e))
    }

    fn failed(&self, account: &str, e: &keyring_core::Error) -> Error {
        Error::new(
            codes::SECRET_STORE_UNAVAILABLE,
            format!("{} refused {SERVICE}/{account}: {e}", self.name),
        )
        .hint(format!(
            "unlock {} and retry, or set {ENV_SECRET_STORE}=file to keep new secrets in files",
            self.name
        ))
    }
}

#[cfg(target_os = "macos")]
fn open_system() -> std::result::Result<Keychain, String> {
    let store: Arc<CredentialStore> =
        apple_native_keyring_store::keychain::Store::new().map_err(|e| e.to_string())?;
    Ok(Keychain::new(store, "the macOS Keychain"))
}

#[cfg(windows)]
fn open_system() -> std::result::Result<Keychain, String> {
    let store: Arc<CredentialStore> =
        windows_native_keyring_store::Store::new().map_err(|e| e.to_string())?;
    Ok(Keychain::new(store, "Windows Credential Manager"))
}

#[cfg(all(unix, not(target_os = "macos")))]
fn open_system() -> std::result::Result<Keychain, String> {
    let store: Arc<CredentialStore> =
        zbus_secret_service_keyring_store::Store::new().map_err(|e| e.to_string())?;
    Ok(Keychain::new(store, "the Secret Service"))
}

/// Where new secrets go.
#[derive(Debug, Clone)]
pub enum Target {
    Keychain(Keychain),
    /// Files, and why not a credential store.
    File {
        reason: String,
    },
    /// The credential store was asked for (`GATEHOUSE_SECRET_STORE=keychain`)
    /// and does not answer: existing files are still read, nothing new is made.
    Unavailable {
        why: String,
    },
}

impl Target {
    fn unavailable(why: &str) -> Error {
        Error::new(
            codes::SECRET_STORE_UNAVAILABLE,
            format!("{ENV_SECRET_STORE}=keychain, but no credential store answers: {why}"),
        )
        .hint(format!(
            "start the system's credential store (a Secret Service on Linux), or set {ENV_SECRET_STORE}=file"
        ))
    }
}

/// Where new secrets go, from the `GATEHOUSE_SECRET_STORE` setting, whether
/// the config directory is the user's own, and the credential store (opened
/// only when the answer depends on it).
pub fn choose(
    setting: Option<&str>,
    users_own_dir: bool,
    open: impl FnOnce() -> std::result::Result<Keychain, String>,
) -> Result<Target> {
    match setting.map(str::trim).filter(|s| !s.is_empty()) {
        Some("file") => Ok(Target::File {
            reason: format!("{ENV_SECRET_STORE}=file"),
        }),
        Some("keychain") => Ok(match open() {
            Ok(k) => Target::Keychain(k),
            Err(why) => Target::Unavailable { why },
        }),
        Some(other) => Err(Error::new(
            codes::INPUT_INVALID,
            format!("{ENV_SECRET_STORE} is {other:?}"),
        )
        .hint(format!(
            "set {ENV_SECRET_STORE} to keychain or file, or unset it"
        ))),
        None if !users_own_dir => Ok(Target::File {
            reason: format!(
                "the config directory is not the user's own (named by {ENV_CONFIG_DIR} or a caller)"
            ),
        }),
        None => Ok(match open() {
            Ok(k) => Target::Keychain(k),
            Err(why) => Target::File {
                reason: format!("no credential store answers: {why}"),
            },
        }),
    }
}

/// Where one secret is.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Place {
    Keychain {
        store: &'static str,
        account: String,
    },
    File(PathBuf),
}

impl std::fmt::Display for Place {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Place::Keychain { store, account } => {
                write!(f, "{store} (service {SERVICE}, account {account})")
            }
            Place::File(path) => write!(f, "the file {}", path.display()),
        }
    }
}

/// A secret and where it was found.
pub struct Stored {
    pub secret: String,
    pub place: Place,
}

impl std::fmt::Debug for Stored {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "Stored({})", self.place)
    }
}

/// The secrets of one config directory.
#[derive(Debug, Clone)]
pub struct SecretStore {
    dir: PathBuf,
    target: Target,
}

impl SecretStore {
    /// The secrets of `dir`, placed as [`choose`] says for this process.
    pub fn for_config_dir(dir: &Path) -> Result<Self> {
        let overridden = std::env::var_os(ENV_CONFIG_DIR).is_some_and(|d| !d.is_empty());
        let users_own = !overridden && default_config_dir().is_some_and(|d| d == dir);
        let setting = std::env::var(ENV_SECRET_STORE).ok();
        Ok(Self::with_target(
            dir,
            choose(setting.as_deref(), users_own, Keychain::system)?,
        ))
    }

    pub fn with_target(dir: &Path, target: Target) -> Self {
        Self {
            dir: dir.to_path_buf(),
            target,
        }
    }

    /// Where new secrets go, and why when that is a file.
    pub fn describe(&self) -> String {
        match &self.target {
            Target::Keychain(k) => format!("{} (service {SERVICE})", k.name),
            Target::File { reason } => {
                format!("owner-only files in {} ({reason})", self.dir.display())
            }
            Target::Unavailable { why } => {
                format!(
                    "nowhere: {ENV_SECRET_STORE}=keychain, but no credential store answers: {why}"
                )
            }
        }
    }

    fn file(&self, account: &str) -> PathBuf {
        self.dir.join(account)
    }

    fn marker(&self, account: &str) -> PathBuf {
        self.dir.join(format!("{account}{MARKER_SUFFIX}"))
    }

    /// The secret `account`, if one was ever stored: its file first (an
    /// existing file always wins), else the credential store its marker
    /// names.
    pub fn load(&self, account: &str) -> Result<Option<Stored>> {
        let file = self.file(account);
        if let Some(secret) = read_owner_only(&file)? {
            return Ok(Some(Stored {
                secret,
                place: Place::File(file),
            }));
        }
        let marker = self.marker(account);
        let Some(fingerprint) = read_owner_only(&marker)? else {
            return Ok(None);
        };
        let k = match &self.target {
            Target::Keychain(k) => k,
            Target::Unavailable { why } => return Err(Target::unavailable(why)),
            Target::File { reason } => return Err(Error::new(
                codes::SECRET_STORE_UNAVAILABLE,
                format!(
                    "{account} is kept in a credential store (as {} says), which this process does not use: {reason}",
                    marker.display()
                ),
            )
            .hint(format!(
                "run where the credential store answers (and {ENV_SECRET_STORE} is not file); removing {} makes a new {account}",
                marker.display()
            ))),
        };
        // The marker is written before the secret: its writer may be between
        // the two steps.
        let deadline = std::time::Instant::now() + CREATION_WAIT;
        loop {
            match k.get(account)? {
                Some(secret) if fingerprint_of(&secret) == fingerprint.trim() => {
                    return Ok(Some(Stored {
                        secret,
                        place: Place::Keychain {
                            store: k.name,
                            account: account.to_string(),
                        },
                    }));
                }
                Some(_) if std::time::Instant::now() >= deadline => {
                    return Err(Error::new(
                        codes::SECRET_STORE_INVALID,
                        format!(
                            "{}'s {SERVICE}/{account} is not the secret Gatehouse stored (its fingerprint differs from {})",
                            k.name,
                            marker.display()
                        ),
                    )
                    .hint(format!(
                        "something replaced it; remove {} and the entry to make a new {account}",
                        marker.display()
                    )));
                }
                None if std::time::Instant::now() >= deadline => {
                    return Err(Error::new(
                        codes::SECRET_STORE_INVALID,
                        format!(
                            "{} has no {SERVICE}/{account}, though {} says it was stored there",
                            k.name,
                            marker.display()
                        ),
                    )
                    .hint(format!(
                        "the entry was deleted; remove {} to make a new {account}",
                        marker.display()
                    )));
                }
                _ => std::thread::sleep(Duration::from_millis(50)),
            }
        }
    }

    /// The secret `account`: the stored one, else `make()`'s, stored now.
    /// Two processes creating at once agree on one secret: each place's
    /// first step is a hard link of a complete file, which only one wins.
    pub fn load_or_create(&self, account: &str, make: impl FnOnce() -> String) -> Result<Stored> {
        if let Some(s) = self.load(account)? {
            return Ok(s);
        }
        if let Target::Unavailable { why } = &self.target {
            return Err(Target::unavailable(why));
        }
        let secret = make();
        match &self.target {
            Target::Unavailable { .. } => {}
            Target::File { .. } => {
                let file = self.file(account);
                if create_owner_only(&self.dir, &file, &secret)? {
                    return Ok(Stored {
                        secret,
                        place: Place::File(file),
                    });
                }
            }
            Target::Keychain(k) => {
                let marker = self.marker(account);
                if create_owner_only(&self.dir, &marker, &fingerprint_of(&secret))? {
                    if let Err(e) = k.set(account, &secret) {
                        let _ = std::fs::remove_file(&marker);
                        return Err(e);
                    }
                    return Ok(Stored {
                        secret,
                        place: Place::Keychain {
                            store: k.name,
                            account: account.to_string(),
                        },
                    });
                }
            }
        }
        // Another process won the race: its secret is the one.
        self.load(account)?.ok_or_else(|| {
            Error::new(
                codes::SECRET_STORE_INVALID,
                format!("{account} vanished while being created"),
            )
        })
    }
}

/// The fingerprint a marker holds: SHA-256 of the secret, in hex (the
/// secrets stored are random keys, so it reveals nothing of them).
fn fingerprint_of(secret: &str) -> String {
    hex::encode(Sha256::digest(secret.as_bytes()))
}

fn file_error(path: &Path, what: impl std::fmt::Display) -> Error {
    Error::new(
        codes::SECRET_STORE_INVALID,
        format!("{} {what}", path.display()),
    )
    .hint("Gatehouse keeps it a file only you can read (0600 in a 0700 folder on Unix); fix its mode, or move it away to make a new one")
}

/// A file's text, if it exists; refused when others can read it.
fn read_owner_only(path: &Path) -> Result<Option<String>> {
    let meta = match std::fs::metadata(path) {
        Ok(m) => m,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
        Err(e) => return Err(file_error(path, format_args!("cannot be read: {e}"))),
    };
    #[cfg(not(unix))]
    let _ = meta;
    #[cfg(unix)]
    if meta.permissions().mode() & 0o077 != 0 {
        return Err(file_error(path, "can be read by other users"));
    }
    std::fs::read_to_string(path)
        .map(Some)
        .map_err(|e| file_error(path, format_args!("cannot be read: {e}")))
}

/// Creates `path` holding `text`, owner-only, atomically (a hard link of a
/// complete file); false when it existed already.
fn create_owner_only(dir: &Path, path: &Path, text: &str) -> Result<bool> {
    let io = |e: std::io::Error| {
        Error::new(
            codes::SECRET_STORE_UNAVAILABLE,
            format!("{} cannot be created: {e}", path.display()),
        )
        .hint("its folder cannot be written by this user: set GATEHOUSE_CONFIG_DIR to a folder it owns (for a service, inside its state directory)")
    };
    std::fs::create_dir_all(dir).map_err(io)?;
    owner_only_dir(dir).map_err(io)?;
    let name = path.file_name().unwrap_or_default().to_string_lossy();
    static SERIAL: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);
    let serial = SERIAL.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
    let tmp = dir.join(format!(".{name}.{}.{serial}", std::process::id()));
    let mut f = owner_only_file(std::fs::OpenOptions::new().write(true).create_new(true))
        .open(&tmp)
        .map_err(io)?;
    let written = f.write_all(text.as_bytes()).and_then(|()| f.sync_all());
    drop(f);
    let linked = written.and_then(|()| std::fs::hard_link(&tmp, path));
    let _ = std::fs::remove_file(&tmp);
    match linked {
        Ok(()) => Ok(true),
        Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => Ok(false),
        Err(e) => Err(io(e)),
    }
}

/// Makes `dir` enterable by its owner only (0700 on Unix; on Windows a
/// folder under the user's profile already has an owner-only ACL).
pub fn owner_only_dir(dir: &Path) -> std::io::Result<()> {
    #[cfg(unix)]
    std::fs::set_permissions(dir, std::fs::Permissions::from_mode(0o700))?;
    #[cfg(not(unix))]
    let _ = dir;
    Ok(())
}

/// A new file readable by its owner only (0600 on Unix).
pub fn owner_only_file(options: &mut std::fs::OpenOptions) -> &mut std::fs::OpenOptions {
    #[cfg(unix)]
    options.mode(0o600);
    options
}

#[cfg(test)]
mod tests {
    use super::*;

    fn mock() -> Keychain {
        Keychain::new(keyring_core::mock::Store::new().unwrap(), "the mock store")
    }

    fn never() -> std::result::Result<Keychain, String> {
        panic!("the credential store was opened although the answer did not depend on it")
    }

    #[test]
    fn the_choice_follows_the_setting_the_directory_and_the_store() {
        let file = |t: Result<Target>| match t.unwrap() {
            Target::File { reason } => reason,
            other => panic!("chose {other:?}"),
        };
        assert_eq!(
            file(choose(Some("file"), true, never)),
            "GATEHOUSE_SECRET_STORE=file"
        );
        assert!(file(choose(None, false, never)).contains("not the user's own"));
        assert!(matches!(
            choose(None, true, || Ok(mock())),
            Ok(Target::Keychain(_))
        ));
        assert!(matches!(
            choose(Some("keychain"), false, || Ok(mock())),
            Ok(Target::Keychain(_))
        ));
        assert_eq!(
            file(choose(None, true, || Err("no D-Bus session".into()))),
            "no credential store answers: no D-Bus session"
        );
        assert!(matches!(
            choose(Some("keychain"), true, || Err("no D-Bus session".into())),
            Ok(Target::Unavailable { why }) if why == "no D-Bus session"
        ));
        assert_eq!(
            choose(Some("vault"), true, never).unwrap_err().code,
            codes::INPUT_INVALID
        );
    }

    #[test]
    fn a_secret_goes_to_the_keychain_once_and_leaves_only_its_fingerprint_on_disk() {
        let dir = tempfile::tempdir().unwrap();
        let k = mock();
        let store = SecretStore::with_target(dir.path(), Target::Keychain(k.clone()));
        let made = store.load_or_create("s", || "first".into()).unwrap();
        assert_eq!(made.secret, "first");
        assert_eq!(
            made.place.to_string(),
            "the mock store (service gatehouse, account s)"
        );
        let again = store.load_or_create("s", || "second".into()).unwrap();
        assert_eq!(again.secret, "first");
        assert_eq!(k.get("s").unwrap().as_deref(), Some("first"));
        assert!(!dir.path().join("s").exists());
        let marker = std::fs::read_to_string(dir.path().join("s.keychain")).unwrap();
        assert!(!marker.contains("first"));
        assert_eq!(marker, fingerprint_of("first"));
    }

    #[test]
    fn an_existing_file_wins_over_the_keychain() {
        let dir = tempfile::tempdir().unwrap();
        let files = SecretStore::with_target(dir.path(), Target::File { reason: "t".into() });
        files.load_or_create("s", || "in a file".into()).unwrap();
        let k = mock();
        let store = SecretStore::with_target(dir.path(), Target::Keychain(k.clone()));
        let got = store.load_or_create("s", || "new".into()).unwrap();
        assert_eq!(got.secret, "in a file");
        assert_eq!(got.place, Place::File(dir.path().join("s")));
        assert_eq!(k.get("s").unwrap(), None);
    }

    /// A process without the credential store (a headless `gatehouse mcp`)
    /// must not make a second secret beside the one in the keychain.
    #[test]
    fn a_secret_in_the_keychain_is_not_replaced_by_a_file_where_the_keychain_is_missing() {
        let dir = tempfile::tempdir().unwrap();
        SecretStore::with_target(dir.path(), Target::Keychain(mock()))
            .load_or_create("s", || "kept".into())
            .unwrap();
        let headless = SecretStore::with_target(
            dir.path(),
            Target::File {
                reason: "no credential store answers".into(),
            },
        );
        let e = headless
            .load_or_create("s", || "second".into())
            .unwrap_err();
        assert_eq!(e.code, codes::SECRET_STORE_UNAVAILABLE);
        assert!(e.message.contains("no credential store answers"), "{e:?}");
        assert!(!dir.path().join("s").exists());
    }

    #[test]
    fn a_replaced_or_deleted_keychain_entry_is_an_error_not_a_new_secret() {
        let dir = tempfile::tempdir().unwrap();
        let k = mock();
        let store = SecretStore::with_target(dir.path(), Target::Keychain(k.clone()));
        store.load_or_create("s", || "kept".into()).unwrap();
        k.set("s", "swapped").unwrap();
        assert_eq!(
            store.load("s").unwrap_err().code,
            codes::SECRET_STORE_INVALID
        );
        k.entry("s").unwrap().delete_credential().unwrap();
        let e = store.load_or_create("s", || "new".into()).unwrap_err();
        assert_eq!(e.code, codes::SECRET_STORE_INVALID);
        assert!(e.message.contains("has no gatehouse/s"), "{e:?}");
    }

    #[test]
    fn a_refusing_keychain_leaves_no_marker() {
        let dir = tempfile::tempdir().unwrap();
        let k = mock();
        let entry = k.entry("s").unwrap();
        let cred: &keyring_core::mock::Cred = entry.as_any().downcast_ref().unwrap();
        cred.set_error(keyring_core::Error::NoStorageAccess("locked".into()));
        let store = SecretStore::with_target(dir.path(), Target::Keychain(k.clone()));
        // The load finds no marker and never asks the store; the set fails.
        let e = store.load_or_create("s", || "x".into()).unwrap_err();
        assert_eq!(e.code, codes::SECRET_STORE_UNAVAILABLE);
        assert!(!dir.path().join("s.keychain").exists());
        assert_eq!(
            store.load_or_create("s", || "y".into()).unwrap().secret,
            "y"
        );
    }

    #[test]
    fn racing_creators_agree_on_one_secret() {
        for target in [
            Target::Keychain(mock()),
            Target::File { reason: "t".into() },
        ] {
            let dir = tempfile::tempdir().unwrap();
            let store = SecretStore::with_target(dir.path(), target);
            let got: Vec<String> = std::thread::scope(|s| {
                let handles: Vec<_> = (0..8)
                    .map(|i| {
                        let store = &store;
                        s.spawn(move || {
                            store
                                .load_or_create("s", || format!("secret {i}"))
                                .unwrap()
                                .secret
                        })
                    })
                    .collect();
                handles.into_iter().map(|h| h.join().unwrap()).collect()
            });
            assert!(got.iter().all(|g| *g == got[0]), "{got:?}");
        }
    }

    /// `GATEHOUSE_SECRET_STORE=keychain` where none answers: the key file
    /// made before is still read; a new secret is refused, not put in a file.
    #[test]
    fn a_keychain_asked_for_and_missing_reads_files_and_makes_nothing() {
        let dir = tempfile::tempdir().unwrap();
        SecretStore::with_target(dir.path(), Target::File { reason: "t".into() })
            .load_or_create("old", || "kept".into())
            .unwrap();
        let store = SecretStore::with_target(
            dir.path(),
            Target::Unavailable {
                why: "no D-Bus session".into(),
            },
        );
        assert_eq!(store.load("old").unwrap().unwrap().secret, "kept");
        let e = store.load_or_create("new", || "x".into()).unwrap_err();
        assert_eq!(e.code, codes::SECRET_STORE_UNAVAILABLE);
        assert!(e.message.contains("no D-Bus session"), "{e:?}");
        assert!(!dir.path().join("new").exists());
        assert!(
            store.describe().starts_with("nowhere: "),
            "{}",
            store.describe()
        );
    }

    #[cfg(unix)]
    #[test]
    fn a_secret_file_others_can_read_is_refused() {
        let dir = tempfile::tempdir().unwrap();
        let store = SecretStore::with_target(dir.path(), Target::File { reason: "t".into() });
        store.load_or_create("s", || "x".into()).unwrap();
        let path = dir.path().join("s");
        assert_eq!(
            std::fs::metadata(&path).unwrap().permissions().mode() & 0o777,
            0o600
        );
        std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o644)).unwrap();
        assert_eq!(
            store.load("s").unwrap_err().code,
            codes::SECRET_STORE_INVALID
        );
    }

    /// This system's own credential store, for real: Credential Manager
    /// under Wine (scripts/wine-test.sh runs it); on Linux, whichever
    /// Secret Service answers, or the file fallback and its reason where
    /// none does.
    #[test]
    fn the_system_store_keeps_a_secret_or_the_fallback_says_why() {
        let dir = tempfile::tempdir().unwrap();
        let account = format!("test-{}", std::process::id());
        let target = choose(None, true, Keychain::system).unwrap();
        let store = SecretStore::with_target(dir.path(), target.clone());
        let made = store.load_or_create(&account, || "system".into()).unwrap();
        match target {
            Target::Keychain(k) => {
                assert!(matches!(made.place, Place::Keychain { .. }), "{made:?}");
                assert_eq!(k.get(&account).unwrap().as_deref(), Some("system"));
                k.entry(&account).unwrap().delete_credential().unwrap();
                assert_eq!(k.get(&account).unwrap(), None);
                println!("kept in {} and deleted", made.place);
            }
            Target::File { reason } => {
                assert!(
                    reason.starts_with("no credential store answers: "),
                    "{reason}"
                );
                assert_eq!(made.place, Place::File(dir.path().join(&account)));
                println!("no credential store here: {reason}");
            }
            Target::Unavailable { why } => panic!("unset, the setting chose nothing: {why}"),
        }
    }
}

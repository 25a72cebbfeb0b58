//! What the desktop app remembers between runs, in one small JSON file in
//! its config directory: the sites opened lately (newest first, the first is
//! reopened at start) and the screen shown last. Window size and position are
//! kept by the window-state plugin next to it.
//!
//! Also [`BackendInfo`], how a window names a site's database: the SQLite file,
//! or the PostgreSQL URL without its password.
//!
//! # Caveats
//! A damaged or unreadable file is not an error: the app starts without its
//! memories (and logs why) rather than refusing to open.

use std::path::Path;

use serde::{Deserialize, Serialize};

use crate::error::{Error, Result, codes};
use crate::site::Site;
use crate::store::DatabaseKind;

/// The file's name in the app's config directory.
pub const FILE: &str = "desktop.json";
/// How many recent sites are kept.
pub const MAX_RECENT: usize = 8;

/// A site opened lately.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, ts_rs::TS)]
pub struct RecentSite {
    pub path: String,
    pub name: String,
    pub scratch: bool,
}

/// The whole file.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize, ts_rs::TS)]
pub struct Remembered {
    #[serde(default)]
    pub recent_sites: Vec<RecentSite>,
    #[serde(default)]
    pub last_screen: Option<String>,
}

impl Remembered {
    /// Reads `dir/desktop.json`; a missing or damaged file gives the defaults.
    pub fn load(dir: &Path) -> Remembered {
        let path = dir.join(FILE);
        match std::fs::read(&path) {
            Ok(bytes) => serde_json::from_slice(&bytes).unwrap_or_else(|e| {
                tracing::warn!(path = %path.display(), error = %e, "ignoring a damaged desktop.json");
                Remembered::default()
            }),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => Remembered::default(),
            Err(e) => {
                tracing::warn!(path = %path.display(), error = %e, "cannot read desktop.json");
                Remembered::default()
            }
        }
    }

    /// Writes `dir/desktop.json` atomically (a temporary file, then a rename).
    pub fn save(&self, dir: &Path) -> Result<()> {
        let io = |e: std::io::Error| {
            Error::new(
                codes::IO_ERROR,
                format!("cannot save the app's settings in {}: {e}", dir.display()),
            )
            .hint("check that the app's config folder is writable")
        };
        std::fs::create_dir_all(dir).map_err(io)?;
        let tmp = dir.join(format!(".{FILE}.tmp"));
        let text = serde_json::to_vec_pretty(self).expect("settings serialise");
        std::fs::write(&tmp, text).map_err(io)?;
        std::fs::rename(&tmp, dir.join(FILE)).map_err(io)
    }

    /// Puts `site` first, removing an older entry for the same folder and the
    /// oldest beyond [`MAX_RECENT`].
    pub fn opened(&mut self, site: RecentSite) {
        self.recent_sites.retain(|s| s.path != site.path);
        self.recent_sites.insert(0, site);
        self.recent_sites.truncate(MAX_RECENT);
    }

    /// Drops `path` from the list (it could not be opened any more).
    pub fn forget(&mut self, path: &str) -> bool {
        let before = self.recent_sites.len();
        self.recent_sites.retain(|s| s.path != path);
        before != self.recent_sites.len()
    }

    /// The site to reopen at start.
    pub fn last_site(&self) -> Option<&RecentSite> {
        self.recent_sites.first()
    }

    /// Remembers the screen shown last: a screen id, 1 to 32 of `a-z0-9-`.
    pub fn set_last_screen(&mut self, id: &str) -> Result<()> {
        let ok = (1..=32).contains(&id.len())
            && id
                .bytes()
                .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'-');
        if !ok {
            return Err(Error::invalid(
                codes::INPUT_INVALID,
                format!("{id:?} is not a screen id"),
                "screen ids are 1 to 32 lowercase letters, digits and dashes",
            ));
        }
        self.last_screen = Some(id.to_string());
        Ok(())
    }
}

/// Where a site's data lives, as the header shows it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, ts_rs::TS)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum BackendInfo {
    /// The embedded (or named) SQLite file.
    Sqlite { path: String },
    /// A PostgreSQL database, its URL without any password.
    Postgres { url: String },
}

impl BackendInfo {
    /// Describes the store a site opened. The URL source is the store's
    /// redacted URL, and any password left is cut again here, so a password
    /// cannot reach the page by either route.
    pub fn of(site: &Site) -> BackendInfo {
        describe(site.store.backend(), site.store.shown_url(), &site.dir)
    }
}

fn describe(backend: DatabaseKind, shown_url: &str, dir: &Path) -> BackendInfo {
    match backend {
        DatabaseKind::Sqlite => {
            let path = url::Url::parse(shown_url)
                .ok()
                .and_then(|u| u.to_file_path().ok())
                .filter(|p| p.is_absolute())
                .unwrap_or_else(|| dir.join(crate::site::DB_FILE));
            BackendInfo::Sqlite {
                path: path.display().to_string(),
            }
        }
        DatabaseKind::Postgres => {
            let (url, _) = crate::site::without_password(shown_url);
            // The redacted form may carry a `***` placeholder as the password.
            let (url, _) = crate::site::without_password(&url);
            BackendInfo::Postgres { url }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn site(path: &str) -> RecentSite {
        RecentSite {
            path: path.into(),
            name: path.trim_start_matches('/').into(),
            scratch: false,
        }
    }

    #[test]
    fn recent_sites_are_newest_first_unique_and_capped() {
        let mut r = Remembered::default();
        for i in 0..MAX_RECENT + 3 {
            r.opened(site(&format!("/s{i}")));
        }
        r.opened(site("/s5"));
        assert_eq!(r.recent_sites.len(), MAX_RECENT);
        assert_eq!(r.last_site().unwrap().path, "/s5");
        assert_eq!(r.recent_sites.iter().filter(|s| s.path == "/s5").count(), 1);
        assert!(
            !r.recent_sites.iter().any(|s| s.path == "/s0"),
            "oldest dropped"
        );
        assert!(r.forget("/s5"));
        assert!(!r.forget("/s5"));
        assert_ne!(r.last_site().unwrap().path, "/s5");
    }

    #[test]
    fn saved_file_round_trips_and_damage_gives_defaults() {
        let tmp = tempfile::tempdir().unwrap();
        let dir = tmp.path().join("config");
        assert_eq!(Remembered::load(&dir), Remembered::default());
        let mut r = Remembered::default();
        r.opened(site("/a"));
        r.set_last_screen("audit").unwrap();
        r.save(&dir).unwrap();
        assert_eq!(Remembered::load(&dir), r);
        std::fs::write(dir.join(FILE), "{not json").unwrap();
        assert_eq!(Remembered::load(&dir), Remembered::default());
    }

    #[test]
    fn screen_ids_are_checked() {
        let mut r = Remembered::default();
        assert!(r.set_last_screen("client-config").is_ok());
        for bad in ["", "Keys", "../x", "a b", &"x".repeat(33)] {
            assert_eq!(
                r.set_last_screen(bad).unwrap_err().code,
                codes::INPUT_INVALID,
                "{bad}"
            );
        }
        assert_eq!(r.last_screen.as_deref(), Some("client-config"));
    }

    #[test]
    fn a_postgres_password_never_shows() {
        let dir = Path::new("/site");
        for url in [
            "postgres://app:hunter2@db:5432/site",
            "postgres://app:***@db:5432/site",
        ] {
            let shown = describe(DatabaseKind::Postgres, url, dir);
            assert_eq!(
                shown,
                BackendInfo::Postgres {
                    url: "postgres://app@db:5432/site".into()
                }
            );
        }
        let redacted = crate::redact::redact_urls("postgres://app:hunter2@db:5432/site");
        let BackendInfo::Postgres { url } = describe(DatabaseKind::Postgres, &redacted, dir) else {
            panic!("postgres");
        };
        assert!(!url.contains("hunter2") && !url.contains("***"), "{url}");
    }

    #[test]
    fn sqlite_shows_the_file() {
        let url = crate::store::sqlite_url(Path::new("/srv/my site/gatehouse.db"));
        assert_eq!(
            describe(DatabaseKind::Sqlite, &url, Path::new("/srv/my site")),
            BackendInfo::Sqlite {
                path: "/srv/my site/gatehouse.db".into()
            }
        );
    }
}

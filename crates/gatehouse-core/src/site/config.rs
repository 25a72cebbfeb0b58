//! The site's key/value config, permission-checked for callers, plus the few
//! settings Gatehouse itself reads (such as the `http_fetch` allowlist).

use std::collections::BTreeMap;

use crate::access::actor::Actor;
use crate::access::permissions::Action;
use crate::error::Result;
use crate::store::{Store, site_config as sql};

/// The config key holding hosts `http_fetch` may reach despite the SSRF guard.
pub const HTTP_FETCH_ALLOWLIST: &str = "http_fetch.allowlist";

/// Values of keys that look secret are never handed to a client.
fn looks_secret(key: &str) -> bool {
    let key = key.to_ascii_lowercase();
    ["password", "secret", "token", "api_key", "apikey"]
        .iter()
        .any(|w| key.contains(w))
}

/// All config entries the actor may read, secret-looking values redacted.
pub async fn read_all(store: &Store, actor: &Actor) -> Result<BTreeMap<String, String>> {
    actor.check(Action::SiteConfigRead)?;
    Ok(sql::all(store)
        .await?
        .into_iter()
        .map(|(k, v)| {
            let v = if looks_secret(&k) {
                "<redacted>".to_string()
            } else {
                v
            };
            (k, v)
        })
        .collect())
}

/// The `http_fetch` allowlist: lowercase host names, from a comma-separated value.
pub async fn http_fetch_allowlist(store: &Store) -> Result<Vec<String>> {
    Ok(parse_list(
        &sql::get(store, HTTP_FETCH_ALLOWLIST)
            .await?
            .unwrap_or_default(),
    ))
}

fn parse_list(value: &str) -> Vec<String> {
    value
        .split(',')
        .map(|h| h.trim().trim_end_matches('.').to_ascii_lowercase())
        .filter(|h| !h.is_empty())
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn allowlist_is_a_trimmed_lowercase_list() {
        assert_eq!(
            parse_list(" Example.COM, ,internal.test.,"),
            vec!["example.com", "internal.test"]
        );
        assert!(parse_list("").is_empty());
    }

    #[test]
    fn secret_keys_are_recognised() {
        assert!(looks_secret("smtp.password"));
        assert!(looks_secret("webhook.TOKEN"));
        assert!(!looks_secret("site.title"));
    }
}

//! Every client's remote config for the URL the panel serves: the same
//! generator as `gatehouse config CLIENT --url URL`.
//!
//! The raw key exists only when it is minted (the store keeps a hash), so a
//! key is written inline only when the caller still holds it; otherwise each
//! client gets its own reference to `GATEHOUSE_API_KEY` (`--secret-ref`), and
//! a client that has no reference in its remote form says so instead.

use std::path::PathBuf;

use serde::Serialize;

use crate::access::keys::RawKey;
use crate::client_config::{
    self, Client, ConfigActor, ConfigRequest, GeneratedConfig, KeyDelivery,
};
use crate::error::ErrorBody;

/// Who the config calls as.
#[derive(Debug, Clone)]
pub enum RemoteKey {
    /// No key: the anonymous `public` actor.
    Public,
    /// A key whose raw form is at hand (just minted).
    Raw(RawKey),
    /// A key known by id only: the client supplies it.
    Reference,
}

/// One client's remote config, or why it has none.
#[derive(Debug, Clone, Serialize, ts_rs::TS)]
pub struct RemoteConfig {
    pub client: Client,
    pub client_name: &'static str,
    #[ts(optional)]
    #[serde(skip_serializing_if = "Option::is_none")]
    pub config: Option<GeneratedConfig>,
    #[ts(optional)]
    #[serde(skip_serializing_if = "Option::is_none")]
    pub unavailable: Option<ErrorBody>,
}

/// The remote config of every client, in core's order, for `url` as `key`.
pub fn remote_configs(url: &str, key: &RemoteKey) -> Vec<RemoteConfig> {
    let actor = match key {
        RemoteKey::Public => ConfigActor::Public,
        RemoteKey::Raw(raw) => ConfigActor::ApiKey(KeyDelivery::Inline(raw.clone())),
        RemoteKey::Reference => ConfigActor::ApiKey(KeyDelivery::Reference),
    };
    Client::ALL
        .into_iter()
        .map(|client| {
            let request = ConfigRequest {
                client,
                // Not used by the remote form.
                binary: PathBuf::new(),
                site_dir: PathBuf::new(),
                server_name: None,
                actor: actor.clone(),
                url: Some(url.to_string()),
            };
            let (config, unavailable) = match client_config::generate(&request) {
                Ok(c) => (Some(c), None),
                Err(e) => (None, Some(e.body())),
            };
            RemoteConfig {
                client,
                client_name: client.display_name(),
                config,
                unavailable,
            }
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    /// With the key known by id only, no config holds a key, every client
    /// with a remote form gets one naming the URL, and the others say why.
    #[test]
    fn a_key_known_by_id_is_referenced_never_inlined() {
        let url = "http://127.0.0.1:8808/mcp";
        let all = remote_configs(url, &RemoteKey::Reference);
        assert_eq!(all.len(), Client::ALL.len());
        let mut written = 0;
        for r in &all {
            match (&r.config, &r.unavailable) {
                (Some(c), None) => {
                    written += 1;
                    for s in &c.snippets {
                        assert!(!s.contains_secret, "{:?}", r.client);
                        assert!(!s.text.contains("gatehouse_sk_"), "{:?}", r.client);
                    }
                    assert!(
                        c.snippets.iter().any(|s| s.text.contains(url)),
                        "{:?}",
                        r.client
                    );
                }
                (None, Some(e)) => assert!(!e.message.is_empty()),
                other => panic!("{:?}: {other:?}", r.client),
            }
        }
        assert!(written >= 5, "only {written} clients have a remote form");
    }

    #[test]
    fn a_fresh_key_is_written_where_the_client_needs_it() {
        let (_, raw) = crate::access::keys::generate();
        let all = remote_configs("http://127.0.0.1:8808/mcp", &RemoteKey::Raw(raw.clone()));
        assert!(all.iter().any(|r| r.config.as_ref().is_some_and(|c| {
            c.snippets
                .iter()
                .any(|s| s.contains_secret && s.text.contains(raw.expose()))
        })));
    }
}

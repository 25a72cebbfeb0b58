//! The actor flags shared by `whoami`, `mcp` and `config`.

use clap::Args;
use gatehouse_core::access::actor::ActorFlags;
use gatehouse_core::access::keys::RawKey;

// No `Debug`: `api_key` holds the raw key text.
#[derive(Args, Clone, Default)]
pub struct ActorArgs {
    /// Run as this user (roles from the site's user store).
    #[arg(long, value_name = "EMAIL")]
    pub email: Option<String>,
    /// Run as a synthetic actor with these roles (scratch sites only).
    #[arg(long, value_name = "ROLES")]
    pub role: Option<String>,
    /// Run as this API key. Prefer GATEHOUSE_API_KEY: argv is visible to other processes.
    #[arg(long, value_name = "KEY", hide_env_values = true)]
    pub api_key: Option<String>,
    /// Run as the key with this id, without its secret (an admin previewing
    /// what the key is served; revoked and expired keys are refused).
    #[arg(long, value_name = "ID")]
    pub key_id: Option<String>,
}

impl ActorArgs {
    pub fn flags(&self) -> ActorFlags {
        ActorFlags {
            email: self.email.clone(),
            role: self.role.clone(),
            api_key: self.api_key.clone().map(RawKey::new),
            env_api_key: None,
            key_id: self.key_id.clone(),
        }
        .with_env()
    }
}

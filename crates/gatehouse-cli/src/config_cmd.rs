//! `gatehouse config`: MCP configuration for AI clients.
//!
//! `gatehouse config --client X` prints ready-to-paste configuration: stdout
//! carries only the text to paste, so `gatehouse config --client cursor >
//! .cursor/mcp.json` works; where it goes, what to do next and any alternative
//! (a client's own `mcp add` line) go to stderr. `--json` prints the whole
//! generated result on stdout instead, for scripts. The subcommands put it to
//! work: `install` merges the entry into the client's file
//! ([`config_install_cmd`](crate::config_install_cmd)), `doctor` checks every
//! entry on this machine ([`config_doctor_cmd`](crate::config_doctor_cmd)),
//! `mcpb` builds a Claude Desktop extension
//! ([`config_mcpb_cmd`](crate::config_mcpb_cmd)).
//!
//! The actor is one of `--email`, `--role`, `--api-key` or `--public`; without
//! one, `GATEHOUSE_API_KEY` from this shell is used if set, else the public actor.
//! `--secret-ref` never needs the key: it emits the client's reference to it.
//! `--url https://host/mcp` writes the remote form instead, for a `gatehouse
//! serve` there: the key goes in a header (or the client's reference to it),
//! and no site is needed here.

use clap::{Args, Subcommand};
use gatehouse_core::access::actor::{ActorFlags, ActorSource};
use gatehouse_core::access::keys::RawKey;
use gatehouse_core::access::permissions::parse_roles;
use gatehouse_core::client_config::{
    self, ConfigActor, ConfigRequest, GeneratedConfig, KeyDelivery,
};
use gatehouse_core::error::{Error, Result, codes};

use crate::Ctx;
use crate::actor_flags::ActorArgs;
use crate::output;

// No `Debug`: the flattened actor flags hold the raw `--api-key` text.
#[derive(Args)]
#[command(args_conflicts_with_subcommands = true, subcommand_negates_reqs = true)]
pub struct ConfigArgs {
    #[command(subcommand)]
    pub action: Option<ConfigAction>,
    /// The client: claude-desktop, claude-code, cursor, vscode, windsurf, zed, codex, continue,
    /// gemini, cline, roo-code, zoo-code, jetbrains, goose, opencode, kiro, copilot or lm-studio.
    #[arg(
        long = "client",
        value_name = "CLIENT",
        required_unless_present = "client_arg"
    )]
    pub client: Option<String>,
    /// The client, as a positional argument (the same as --client).
    #[arg(value_name = "CLIENT", conflicts_with = "client", hide = true)]
    pub client_arg: Option<String>,
    #[command(flatten)]
    pub who: ActorChoice,
}

#[derive(Subcommand)]
pub enum ConfigAction {
    /// Merge the Gatehouse entry into a client's own config file (diff shown, backup kept).
    Install(crate::config_install_cmd::InstallArgs),
    /// Find client config files on this machine and check every Gatehouse entry in them.
    Doctor(crate::config_doctor_cmd::DoctorArgs),
    /// Build a Claude Desktop extension (.mcpb) that keeps the API key in the OS keychain.
    Mcpb(crate::config_mcpb_cmd::McpbArgs),
}

/// Who the configured server runs as, and under which name: shared by the
/// printed config and `install`.
#[derive(Args)]
pub struct ActorChoice {
    #[command(flatten)]
    pub actor: ActorArgs,
    /// Run as the anonymous public actor even when GATEHOUSE_API_KEY is set.
    #[arg(long, conflicts_with_all = ["email", "role", "api_key"])]
    pub public: bool,
    /// Reference the API key through the client's own secret mechanism instead of
    /// writing it into the config.
    #[arg(long, conflicts_with_all = ["email", "role", "public"])]
    pub secret_ref: bool,
    /// The server's name in the client [default: gatehouse].
    #[arg(long, value_name = "NAME")]
    pub name: Option<String>,
    /// Reach a `gatehouse serve` at this URL (e.g. https://host/mcp) instead of starting
    /// `gatehouse mcp`: the client's remote form, the key sent as a bearer token.
    #[arg(long, value_name = "URL", conflicts_with_all = ["email", "role"])]
    pub url: Option<String>,
}

pub async fn run(ctx: &Ctx, args: ConfigArgs) -> Result<String> {
    match args.action {
        Some(ConfigAction::Install(a)) => return crate::config_install_cmd::run(ctx, a),
        Some(ConfigAction::Doctor(a)) => return crate::config_doctor_cmd::run(a, ctx.json).await,
        Some(ConfigAction::Mcpb(a)) => return crate::config_mcpb_cmd::run(ctx, a),
        None => {}
    }
    let client = args
        .client
        .as_deref()
        .or(args.client_arg.as_deref())
        .unwrap_or_default();
    let request = request(ctx, client, &args.who)?;
    let config = client_config::generate(&request)?;
    if ctx.json {
        return Ok(output::to_json(&config));
    }
    let database_url = ctx.settings.database_url.is_some() && request.url.is_none();
    eprint!("{}", notes(&config, database_url));
    Ok(config.snippets[0].text.clone())
}

/// The request for `client` from the flags: this binary, the resolved site,
/// the chosen actor.
pub fn request(ctx: &Ctx, client: &str, who: &ActorChoice) -> Result<ConfigRequest> {
    // Taken out of the environment at start (see main), so read through core.
    let env_key = ActorFlags::default()
        .with_env()
        .env_api_key
        .filter(|k| !k.expose().is_empty());
    let actor = resolve_actor(who, env_key)?;
    let client = client.parse()?;
    if who.url.is_some() {
        // The remote form names no binary and no site: none is needed here.
        return Ok(ConfigRequest {
            client,
            binary: std::path::PathBuf::new(),
            site_dir: std::path::PathBuf::new(),
            server_name: who.name.clone(),
            actor,
            url: who.url.clone(),
        });
    }
    Ok(ConfigRequest {
        client,
        binary: this_binary()?,
        site_dir: client_config::check_site(&ctx.settings.dir, &actor)?,
        server_name: who.name.clone(),
        actor,
        url: None,
    })
}

/// The absolute path of the running `gatehouse`, as a config should name it.
pub fn this_binary() -> Result<std::path::PathBuf> {
    std::env::current_exe()
        .map_err(|e| {
            Error::new(
                codes::IO_ERROR,
                format!("cannot locate the gatehouse binary: {e}"),
            )
        })
        .and_then(|exe| client_config::client_path(&exe))
}

/// The actor from the flags (core's one-actor rule), else the key from the
/// environment: here flags win over `GATEHOUSE_API_KEY` instead of conflicting.
fn resolve_actor(args: &ActorChoice, env_key: Option<RawKey>) -> Result<ConfigActor> {
    let flags = ActorFlags {
        env_api_key: None,
        ..args.actor.flags()
    };
    Ok(match flags.source()? {
        Some(ActorSource::KeyId(id)) => {
            return Err(Error::invalid(
                codes::INPUT_INVALID,
                format!("a client config cannot run as key {id} by its id"),
                "give the key itself (GATEHOUSE_API_KEY or --api-key), or --secret-ref for a client that supplies it",
            ));
        }
        Some(ActorSource::Email(email)) => ConfigActor::Email(email.to_string()),
        Some(ActorSource::Roles(roles)) => ConfigActor::Roles(parse_roles(roles)?),
        // clap keeps --public and --secret-ref apart from the flags they exclude.
        _ if args.public => ConfigActor::Public,
        _ if args.secret_ref => ConfigActor::ApiKey(KeyDelivery::Reference),
        Some(ActorSource::ApiKey(key)) => ConfigActor::ApiKey(KeyDelivery::Inline(key.clone())),
        None => env_key.map_or(ConfigActor::Public, |key| {
            ConfigActor::ApiKey(KeyDelivery::Inline(key))
        }),
    })
}

/// The text for stderr: every snippet's instructions and locations, and the
/// alternatives themselves (they never hold a raw key).
fn notes(config: &GeneratedConfig, database_url_given: bool) -> String {
    let mut out = String::new();
    for (i, snippet) in config.snippets.iter().enumerate() {
        if i > 0 {
            out.push_str(&snippet.text);
        }
        out.push_str(&format!(
            "# {}: {}\n",
            config.client_name, snippet.instructions
        ));
        for loc in &snippet.locations {
            let os = loc.os.map(|os| format!(", {os}")).unwrap_or_default();
            out.push_str(&format!("#   {}{os}: {}\n", loc.scope, loc.path));
        }
    }
    if database_url_given {
        out.push_str(
            "# note: the database URL given to this command is not written into the config; \
             the server uses the site's gatehouse.toml (database_url) or its embedded file.\n",
        );
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use clap::Parser;
    use gatehouse_core::access::permissions::Role;
    use gatehouse_core::client_config::Client;
    use gatehouse_core::site::Settings;

    #[derive(Parser)]
    struct Cli {
        #[command(flatten)]
        args: ConfigArgs,
    }

    fn parse(argv: &[&str]) -> std::result::Result<ConfigArgs, clap::Error> {
        Cli::try_parse_from(std::iter::once("config").chain(argv.iter().copied())).map(|c| c.args)
    }

    fn args(argv: &[&str]) -> ConfigArgs {
        parse(argv).unwrap()
    }

    #[test]
    fn public_and_secret_ref_exclude_the_other_actor_flags() {
        assert!(parse(&["--client", "zed", "--public", "--role", "viewer"]).is_err());
        assert!(parse(&["--client", "zed", "--public", "--api-key", "k"]).is_err());
        assert!(parse(&["--client", "zed", "--secret-ref", "--email", "a@b.c"]).is_err());
        assert!(parse(&["--client", "zed", "--secret-ref", "--public"]).is_err());
        assert!(parse(&["--client", "zed", "--secret-ref", "--api-key", "k"]).is_ok());
    }

    #[test]
    fn two_actor_flags_conflict() {
        let a = args(&["--client", "zed", "--email", "a@b.c", "--role", "viewer"]);
        let err = resolve_actor(&a.who, None).unwrap_err();
        assert_eq!(err.code, codes::ACTOR_FLAGS_CONFLICT);
    }

    #[test]
    fn flags_win_over_the_environment_key() {
        let env = || Some(RawKey::new("from_env"));
        let resolve = |argv: &[&str], env| resolve_actor(&args(argv).who, env).unwrap();
        let zed = |rest: &[&'static str]| [&["--client", "zed"][..], rest].concat();
        assert!(matches!(
            resolve(&zed(&["--email", "a@b.c"]), env()),
            ConfigActor::Email(e) if e == "a@b.c"
        ));
        assert!(matches!(
            resolve(&zed(&["--role", "editor,viewer"]), env()),
            ConfigActor::Roles(r) if r == [Role::Viewer, Role::Editor]
        ));
        assert!(matches!(
            resolve(&zed(&["--public"]), env()),
            ConfigActor::Public
        ));
        assert!(matches!(
            resolve(&zed(&["--api-key", "flag"]), env()),
            ConfigActor::ApiKey(KeyDelivery::Inline(k)) if k.expose() == "flag"
        ));
        assert!(matches!(
            resolve(&zed(&[]), env()),
            ConfigActor::ApiKey(KeyDelivery::Inline(k)) if k.expose() == "from_env"
        ));
        assert!(matches!(
            resolve(&zed(&["--secret-ref"]), env()),
            ConfigActor::ApiKey(KeyDelivery::Reference)
        ));
        assert!(matches!(resolve(&zed(&[]), None), ConfigActor::Public));
    }

    #[test]
    fn notes_carry_the_alternative_but_never_the_key() {
        let site = tempfile::tempdir().unwrap();
        std::fs::write(site.path().join("gatehouse.toml"), "name = \"t\"\n").unwrap();
        let key = gatehouse_core::access::keys::generate().1;
        let request = ConfigRequest {
            client: Client::ClaudeCode,
            binary: std::env::current_exe().unwrap(),
            site_dir: site.path().to_path_buf(),
            server_name: None,
            actor: ConfigActor::ApiKey(KeyDelivery::Inline(key.clone())),
            url: None,
        };
        let config = client_config::generate(&request).unwrap();
        let text = notes(&config, true);
        assert!(text.contains("claude mcp add gatehouse"), "{text}");
        assert!(text.contains("database URL"), "{text}");
        assert!(!text.contains(key.expose()));
    }

    #[test]
    fn run_uses_the_resolved_site() {
        let site = tempfile::tempdir().unwrap();
        std::fs::write(site.path().join("gatehouse.toml"), "name = \"t\"\n").unwrap();
        let ctx = Ctx {
            settings: Settings {
                dir: site.path().to_path_buf(),
                database_url: None,
            },
            json: false,
        };
        let out = tokio::runtime::Runtime::new()
            .unwrap()
            .block_on(run(&ctx, args(&["--client", "cursor", "--public"])))
            .unwrap();
        let doc: serde_json::Value = serde_json::from_str(&out).unwrap();
        let canonical = site.path().canonicalize().unwrap();
        assert_eq!(
            doc["mcpServers"]["gatehouse"]["args"][2],
            canonical.to_str().unwrap()
        );
    }

    #[test]
    fn client_is_a_flag_or_a_positional_and_url_excludes_user_actors() {
        assert_eq!(
            args(&["cursor", "--public"]).client_arg.as_deref(),
            Some("cursor")
        );
        assert!(parse(&["cursor", "--client", "zed"]).is_err());
        assert!(parse(&["--public"]).is_err());
        assert!(parse(&["cursor", "--url", "https://h/mcp", "--email", "a@b.c"]).is_err());
        assert!(parse(&["cursor", "--url", "https://h/mcp", "--secret-ref"]).is_ok());
    }

    #[test]
    fn help_lists_every_client() {
        use clap::CommandFactory;
        let cmd = Cli::command();
        let client = cmd
            .get_arguments()
            .find(|a| a.get_id() == "client")
            .unwrap();
        let help = client.get_help().unwrap().to_string();
        for c in Client::ALL {
            assert!(help.contains(c.id()), "{help} lacks {c}");
        }
    }
}

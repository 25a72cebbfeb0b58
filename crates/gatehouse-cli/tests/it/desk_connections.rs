//! The core behind the desktop's Connections and Actor preview screens
//! (decision "Desktop connections"), in process against a real site (SQLite, or PostgreSQL with
//! `GATEHOUSE_TEST_PG_URL`), real fixture servers and the real `gatehouse`
//! binary: consent per exact definition, editing, call records, and the
//! manifest `gatehouse mcp` serves each actor.

use gatehouse_core::access::permissions::Role;
use gatehouse_core::connections::actor_preview::{self, Presence, PreviewActor};
use gatehouse_core::connections::consent;
use gatehouse_core::connections::saved::{self, SavedConnection, SavedLimits};
use gatehouse_core::error::codes;
use gatehouse_core::mcp::client::{CallOptions, Connection};
use gatehouse_core::sandbox::{ChildSpec, EnvValue};
use gatehouse_core::site::{self, Settings, Site};
use serde_json::json;

use crate::util::{BIN, TestSite, fixture};

fn rt() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .unwrap()
}

async fn open(t: &TestSite) -> Site {
    site::open(&Settings {
        dir: t.dir.clone(),
        database_url: t.database_url.clone(),
    })
    .await
    .unwrap()
}

fn echo(name: &str) -> SavedConnection {
    SavedConnection {
        name: name.into(),
        spec: ChildSpec::new("python3").arg(fixture("mcp_server.py")).env(
            "TOKEN",
            EnvValue::SecretFromHost {
                name: "GATEHOUSE_TEST_TOKEN_NEVER_SET".into(),
            },
        ),
        limits: SavedLimits::default(),
        created_at: gatehouse_core::time::now_ms(),
    }
}

async fn actions(site: &Site) -> Vec<(String, String)> {
    let mut rows = gatehouse_core::access::audit::list(&site.store, 1000)
        .await
        .unwrap();
    rows.sort_by_key(|e| e.seq);
    rows.into_iter()
        .map(|e| (e.action, e.subject))
        .filter(|(a, _)| a.starts_with("connection."))
        .collect()
}

#[test]
fn consent_is_asked_again_when_the_definition_changes() {
    let t = TestSite::new("desk_consent");
    rt().block_on(async {
        let site = open(&t).await;
        let conn = echo("echo");
        saved::add(&site.store, "desktop", &conn).await.unwrap();

        // Never agreed: refused, with exactly what the dialog must show.
        let err = consent::require(&site, &conn).await.unwrap_err();
        assert_eq!(err.code, codes::CONSENT_REQUIRED);
        let req = err.detail.unwrap();
        assert_eq!(req["argv"], json!(["python3", fixture("mcp_server.py")]));
        assert_eq!(
            req["env"],
            json!([{"name": "TOKEN", "source": "secret", "host_variable": "GATEHOUSE_TEST_TOKEN_NEVER_SET"}])
        );
        assert_eq!(req["changed_since_consent"], json!(false));
        assert_eq!(req["limits"]["call_timeout_ms"], json!(30_000));
        let hash = req["definition_sha256"].as_str().unwrap().to_string();

        // A hash other than the one shown stores nothing.
        let stale = consent::grant(&site.store, "desktop", "echo", &"0".repeat(64))
            .await
            .unwrap_err();
        assert_eq!(stale.code, codes::CONSENT_STALE);
        assert!(!consent::is_granted(&site.store, &conn).await.unwrap());

        consent::grant(&site.store, "desktop", "echo", &hash).await.unwrap();
        consent::require(&site, &conn).await.unwrap();

        // Editing the command asks again, and says it changed.
        let mut edited = conn.clone();
        edited.spec.args.push("--flood-mb".into());
        edited.spec.args.push("1".into());
        saved::update(&site.store, "desktop", "echo", &edited).await.unwrap();
        let again = consent::require(&site, &edited).await.unwrap_err();
        assert_eq!(again.code, codes::CONSENT_REQUIRED);
        assert_eq!(again.detail.unwrap()["changed_since_consent"], json!(true));

        // A copy is a new connection: it needs its own consent.
        let copy = saved::duplicate(&site.store, "desktop", "echo", "echo-copy").await.unwrap();
        assert_eq!(copy.spec, edited.spec);
        assert_eq!(
            consent::require(&site, &copy).await.unwrap_err().code,
            codes::CONSENT_REQUIRED
        );

        // Removing forgets the consent: the same definition re-added asks again.
        let req = consent::request(&site, &edited).await.unwrap();
        consent::grant(&site.store, "desktop", "echo", &req.definition_sha256).await.unwrap();
        saved::remove(&site.store, "desktop", "echo").await.unwrap();
        saved::add(&site.store, "desktop", &edited).await.unwrap();
        assert!(!consent::is_granted(&site.store, &edited).await.unwrap());

        assert_eq!(
            actions(&site).await,
            [
                ("connection.add".into(), "echo".into()),
                ("connection.consent".into(), "echo".into()),
                ("connection.edit".into(), "echo".into()),
                ("connection.add".into(), "echo-copy".into()),
                ("connection.consent".into(), "echo".into()),
                ("connection.remove".into(), "echo".into()),
                ("connection.add".into(), "echo".into()),
            ]
        );
        site.store.close().await;
    });
}

/// A consent row is in the site's database, which others write too (a
/// shared PostgreSQL site, a copied folder): one written elsewhere, for
/// exactly this definition, had started the server here with no dialog.
#[test]
fn a_consent_written_elsewhere_starts_nothing_here() {
    let t = TestSite::new("desk_consent_elsewhere");
    rt().block_on(async {
        let site = open(&t).await;
        let conn = echo("echo");
        saved::add(&site.store, "desktop", &conn).await.unwrap();
        let hash = consent::request(&site, &conn)
            .await
            .unwrap()
            .definition_sha256;
        t.sql(&format!(
            "INSERT INTO mcp_connection_consents (name, definition_sha256, granted_by, granted_at) \
             VALUES ('echo', '{hash}', 'desktop', 1)"
        ));
        assert!(!consent::is_granted(&site.store, &conn).await.unwrap());
        let err = consent::require(&site, &conn).await.unwrap_err();
        assert_eq!(err.code, codes::CONSENT_REQUIRED);
        assert_eq!(err.detail.unwrap()["changed_since_consent"], json!(true));
        // Agreed on this machine, it starts here.
        consent::grant(&site.store, "desktop", "echo", &hash)
            .await
            .unwrap();
        consent::require(&site, &conn).await.unwrap();
    });
}

/// A connection still starting when the desktop switched sites had been
/// registered under the new site, running the old site's program.
#[test]
fn a_connection_started_across_a_site_switch_is_stopped_not_registered() {
    let t = TestSite::new("desk_registry_switch");
    rt().block_on(async {
        let site = open(&t).await;
        let mut conn = echo("echo");
        conn.spec.env.clear();
        saved::add(&site.store, "desktop", &conn).await.unwrap();
        let registry = gatehouse_core::connections::registry::Registry::default();
        let pid = std::cell::Cell::new(0);
        let err = registry
            .open("echo", async {
                let live = Connection::connect(saved::connect_options(&site, &conn)?).await?;
                pid.set(live.pid());
                registry.clear();
                Ok(live)
            })
            .await
            .unwrap_err();
        assert_eq!(err.code, codes::SITE_NOT_OPEN, "{err:?}");
        assert!(registry.get("echo").is_none());
        let gone = std::time::Instant::now() + std::time::Duration::from_secs(10);
        while std::path::Path::new(&format!("/proc/{}", pid.get())).exists()
            && std::fs::read_to_string(format!("/proc/{}/stat", pid.get()))
                .is_ok_and(|s| !s.contains(") Z"))
        {
            assert!(std::time::Instant::now() < gone, "the server still runs");
            tokio::time::sleep(std::time::Duration::from_millis(50)).await;
        }
    });
}

#[test]
fn edits_are_validated_by_field_and_renames_refuse_a_taken_name() {
    let t = TestSite::new("desk_edit");
    rt().block_on(async {
        let site = open(&t).await;
        saved::add(&site.store, "desktop", &echo("a"))
            .await
            .unwrap();
        saved::add(&site.store, "desktop", &echo("b"))
            .await
            .unwrap();
        let mut renamed = echo("b");
        let taken = saved::update(&site.store, "desktop", "a", &renamed)
            .await
            .unwrap_err();
        assert_eq!(taken.code, codes::CONNECTION_EXISTS);
        assert_eq!(taken.detail.unwrap()["field"], "name");
        renamed.name = "c".into();
        saved::update(&site.store, "desktop", "a", &renamed)
            .await
            .unwrap();
        let names: Vec<String> = saved::list(&site.store)
            .await
            .unwrap()
            .into_iter()
            .map(|c| c.name)
            .collect();
        assert_eq!(names, ["b", "c"]);
        let mut bad = echo("c");
        bad.spec.env.insert(
            "SECRET".into(),
            EnvValue::Secret {
                value: gatehouse_core::sandbox::SecretValue::new("hunter2"),
            },
        );
        let err = saved::update(&site.store, "desktop", "c", &bad)
            .await
            .unwrap_err();
        assert_eq!(
            (err.code, err.detail.unwrap()["field"].clone()),
            (codes::ENV_INVALID, json!("env.SECRET"))
        );
        let missing = saved::update(&site.store, "desktop", "zzz", &echo("zzz"))
            .await
            .unwrap_err();
        assert_eq!(missing.code, codes::CONNECTION_NOT_FOUND);
        site.store.close().await;
    });
}

#[test]
fn call_records_of_a_connection_come_newest_first() {
    let t = TestSite::new("desk_records");
    rt().block_on(async {
        let site = open(&t).await;
        let mut conn = echo("echo");
        conn.spec.env.clear();
        saved::add(&site.store, "desktop", &conn).await.unwrap();
        let live = Connection::connect(saved::connect_options(&site, &conn).unwrap())
            .await
            .unwrap();
        let usage = live.usage().expect("running");
        assert!(usage.rss_bytes > 0 && usage.processes >= 1, "{usage:?}");
        assert_eq!(usage.calls_in_flight, 0);
        let tools = live.list_tools().await.unwrap();
        let echo_tool = tools.iter().find(|t| t.name == "echo").unwrap();
        assert_eq!(echo_tool.description.as_deref(), Some("echo"));
        assert!(
            echo_tool.input_schema["properties"]["message"].is_object(),
            "{:?}",
            echo_tool.input_schema
        );
        let first = live
            .call_tool("echo", json!({"message": "one"}), CallOptions::default())
            .await;
        let second = live
            .call_tool("write", json!({"key": "k"}), CallOptions::default())
            .await;
        live.clone().close().await;
        assert!(live.usage().is_none(), "no usage once ended");
        assert!(live.end_message().is_some());
        let records = saved::call_records(&site.store, "echo", 0, 10)
            .await
            .unwrap()
            .records;
        let got: Vec<(&str, &str)> = records
            .iter()
            .map(|r| (r.call_id.as_str(), r.tool.as_str()))
            .collect();
        assert_eq!(
            got,
            [
                (second.call_id.as_str(), "write"),
                (first.call_id.as_str(), "echo")
            ]
        );
        assert!(records.iter().all(|r| r.finished_at_ms.is_some()));
        assert_eq!(
            saved::call_records(&site.store, "other", 0, 10)
                .await
                .unwrap()
                .records
                .len(),
            0
        );
        site.store.close().await;
    });
}

#[test]
fn actor_preview_serves_public_and_editor_different_tools() {
    let t = TestSite::new("desk_preview");
    rt().block_on(async {
        let site = open(&t).await;
        let cli = std::path::Path::new(BIN);
        let public = actor_preview::preview(&site, cli, &PreviewActor::Public)
            .await
            .unwrap();
        let editor = actor_preview::preview(&site, cli, &PreviewActor::Roles("editor".into()))
            .await
            .unwrap();
        assert_eq!(public.actor, "public");
        let canonical = t.dir.canonicalize().unwrap().display().to_string();
        assert_eq!(editor.granted_paths, [canonical]);
        let rows = actor_preview::compare(&public.tools, &editor.tools);
        let only_editor: Vec<&str> = rows
            .iter()
            .filter(|r| r.presence == Presence::OnlyRight)
            .map(|r| r.name.as_str())
            .collect();
        assert!(
            !only_editor.is_empty(),
            "editor sees more than public: {rows:?}"
        );
        assert!(
            rows.iter().all(|r| r.presence != Presence::OnlyLeft),
            "{rows:?}"
        );

        // A key: its raw value goes in the child's environment, never argv,
        // and the manifest is the key's roles'.
        let minted = gatehouse_core::access::keys::mint(
            &site.store,
            "test",
            "viewer key",
            &[Role::Viewer],
            None,
        )
        .await
        .unwrap();
        let actor = PreviewActor::Key {
            key_id: minted.info.id.clone(),
            raw: Some(minted.key.clone()),
        };
        let (spec, profile) = actor_preview::spec(&site, cli, &actor).unwrap();
        assert!(!spec.args.iter().any(|a| a.contains(minted.key.expose())));
        assert!(matches!(
            spec.env.get("GATEHOUSE_API_KEY"),
            Some(EnvValue::Secret { .. })
        ));
        assert_eq!(profile.read_write, [t.dir.canonicalize().unwrap()]);
        assert!(profile.read_only.is_empty());
        let by_key = actor_preview::preview(&site, cli, &actor).await.unwrap();
        let viewer = actor_preview::preview(&site, cli, &PreviewActor::Roles("viewer".into()))
            .await
            .unwrap();
        assert_eq!(by_key.actor, format!("key:{}", minted.info.id));
        let names = |m: &actor_preview::ActorManifest| {
            m.tools.iter().map(|t| t.name.clone()).collect::<Vec<_>>()
        };
        assert_eq!(names(&by_key), names(&viewer));
        assert!(!by_key.stderr.text.contains(minted.key.expose()));

        // The same key by its id alone (a key minted elsewhere: no secret
        // here): the same manifest; once revoked, refused.
        let by_id = PreviewActor::Key {
            key_id: minted.info.id.clone(),
            raw: None,
        };
        let (spec, _) = actor_preview::spec(&site, cli, &by_id).unwrap();
        assert!(spec.args.contains(&format!("--key-id={}", minted.info.id)));
        assert!(!spec.env.contains_key("GATEHOUSE_API_KEY"));
        let by_id_manifest = actor_preview::preview(&site, cli, &by_id).await.unwrap();
        assert_eq!(by_id_manifest.actor, by_key.actor);
        assert_eq!(names(&by_id_manifest), names(&viewer));
        gatehouse_core::access::keys::revoke(&site.store, "test", &minted.info.id)
            .await
            .unwrap();
        let refused = actor_preview::preview(&site, cli, &by_id)
            .await
            .unwrap_err();
        let said = refused.detail.as_ref().map(|d| d["stderr"].to_string());
        assert!(
            said.is_some_and(|s| s.contains("ACTOR_API_KEY_INVALID") && s.contains("revoked")),
            "{refused:?}"
        );
        site.store.close().await;
    });
}

/// What the window sends is checked before anything is spawned, and each
/// value is one `--flag=value` word: an email or key id can never read as a
/// flag of `gatehouse mcp` (say `--role=admin`).
#[test]
fn preview_actor_values_are_checked_and_never_read_as_flags() {
    let t = TestSite::new("desk_preview_values");
    rt().block_on(async {
        let site = open(&t).await;
        let cli = std::path::Path::new(BIN);
        for (actor, code) in [
            (PreviewActor::User("--role=admin".into()), "EMAIL_INVALID"),
            (
                PreviewActor::User("a b@example.com".into()),
                "EMAIL_INVALID",
            ),
            (
                PreviewActor::Key {
                    key_id: "--role=admin".into(),
                    raw: None,
                },
                "INPUT_INVALID",
            ),
            (
                PreviewActor::Key {
                    key_id: "abc".into(),
                    raw: None,
                },
                "INPUT_INVALID",
            ),
        ] {
            let err = actor_preview::spec(&site, cli, &actor).unwrap_err();
            assert_eq!(err.code, code, "{actor:?}: {err:?}");
        }
        // A real address that starts like a flag stays the value of --email.
        let (spec, _) =
            actor_preview::spec(&site, cli, &PreviewActor::User("-x@example.com".into())).unwrap();
        assert_eq!(spec.args.last().unwrap(), "--email=-x@example.com");
        let err = actor_preview::preview(&site, cli, &PreviewActor::User("-x@example.com".into()))
            .await
            .unwrap_err();
        let said = err.detail.as_ref().map(|d| d["stderr"].to_string());
        assert!(
            said.is_some_and(|s| s.contains("-x@example.com")),
            "the server was asked for that user, and refused: {err:?}"
        );
        site.store.close().await;
    });
}

#[test]
fn roles_preview_is_refused_on_a_site_that_is_not_scratch() {
    let t = TestSite::plain("desk_preview_plain");
    rt().block_on(async {
        let site = open(&t).await;
        let err = actor_preview::spec(
            &site,
            std::path::Path::new(BIN),
            &PreviewActor::Roles("editor".into()),
        )
        .unwrap_err();
        assert_eq!(err.code, codes::INPUT_INVALID);
        site.store.close().await;
    });
}

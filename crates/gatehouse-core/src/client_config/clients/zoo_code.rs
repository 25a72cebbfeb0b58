//! Zoo Code, the community fork of Roo Code that Roo's shutdown notice points
//! to (Zoo-Code-Org/Zoo-Code; `src/package.json`: publisher
//! `ZooCodeOrganization`, name `zoo-code`, v3.82.0, so its global file is in
//! `globalStorage/zoocodeorganization.zoo-code/settings/`). It kept Roo's
//! entry format and `${env:VAR}` expansion; the project file is `.zoo/mcp.json`,
//! with `.roo/mcp.json` read when that is absent
//! (`src/services/mcp/__tests__/McpHub.zooMigration.spec.ts`).

use super::super::paths::Scope;
use super::roo_code::{Flavour, REMOTE, SHAPE, file, render};
use super::{ClientFile, ClientSpec, Remote, env_colon, no_check};
use crate::client_config::paths::join;

pub(super) const SPEC: ClientSpec = ClientSpec {
    name: "Zoo Code",
    aliases: &["zoo", "zoocode"],
    shape: SHAPE,
    secret_ref: Some(env_colon),
    render: |spec| render(spec, &ZOO),
    check: no_check,
    cli: None,
    default_scope: Scope::Project,
    file: |home, scope, project, _| file(home, scope, project, &ZOO),
    also_read: |_, project| {
        // The legacy project file Zoo Code falls back to.
        let legacy = join(project, &[".roo", MCP_SERVERS_FILE]);
        vec![(
            Scope::Project,
            ClientFile::new(legacy, crate::client_config::paths::Syntax::Json),
        )]
    },
    no_file: None,
    remote: Remote::Form {
        shape: REMOTE,
        render: |spec| render(spec, &ZOO),
    },
};

const MCP_SERVERS_FILE: &str = "mcp.json";

const ZOO: Flavour = Flavour {
    name: "Zoo Code",
    storage: "zoocodeorganization.zoo-code",
    project_dir: ".zoo",
    note: "",
};

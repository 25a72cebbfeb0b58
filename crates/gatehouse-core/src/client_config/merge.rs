//! Editing a client's file in place: set one server entry (and, for VS Code,
//! one input; for a Continue block file, one item of its server list) while
//! every other entry, comment and blank line stays as it was.
//!
//! Each syntax goes through a lossless editor: `jsonc-parser`'s concrete syntax
//! tree for JSON (comments allowed only where the client's own parser allows
//! them), `toml_edit` for TOML, `yaml-edit` for YAML. [`apply`] then re-parses
//! the result with the format's ordinary parser and checks it equals the old
//! document with exactly the [`Edit`]s applied ([`apply_to_value`]), so an
//! editor quirk can never reach the disk as a changed or dropped entry.

use std::str::FromStr;

use jsonc_parser::ParseOptions;
use jsonc_parser::cst::{CstInputValue, CstObject, CstRootNode};
use serde_json::Value;

use super::paths::Syntax;
use super::spec::internal;
use crate::error::{Error, Result, codes};

/// One change to a document.
#[derive(Debug, Clone, PartialEq)]
pub enum Edit {
    /// Sets the value at `path` (object keys), creating missing parents.
    Set { path: Vec<String>, value: Value },
    /// In the array at `path`, replaces the element whose `key` equals the
    /// item's, or appends the item.
    Upsert {
        path: Vec<String>,
        key: String,
        item: Value,
    },
}

/// Why a file's text cannot be edited: it does not parse, or its shape is not
/// what the client documents (a servers key that is not a map).
#[derive(Debug)]
pub struct Unparsable(pub String);

/// Parses `text` as `syntax` into a JSON value (blank text is an empty map).
pub fn parse(syntax: Syntax, text: &str) -> std::result::Result<Value, Unparsable> {
    if text.trim().is_empty() {
        return Ok(Value::Object(Default::default()));
    }
    let bad = |e: &dyn std::fmt::Display| Unparsable(e.to_string());
    match syntax {
        Syntax::Json => serde_json::from_str(text).map_err(|e| bad(&e)),
        Syntax::Jsonc => {
            jsonc_parser::parse_to_serde_value::<Value>(text, &ParseOptions::default())
                .map_err(|e| bad(&e))
        }
        Syntax::Toml => toml::from_str(text).map_err(|e| bad(&e)),
        Syntax::Yaml | Syntax::YamlFile => serde_yaml_ng::from_str(text).map_err(|e| bad(&e)),
    }
}

/// The edits applied to an in-memory value: the reference `apply` is checked
/// against.
pub fn apply_to_value(doc: &mut Value, edits: &[Edit]) -> std::result::Result<(), Unparsable> {
    for edit in edits {
        let (path, last) = match edit {
            Edit::Set { path, .. } | Edit::Upsert { path, .. } => {
                let (last, parents) = path.split_last().expect("an edit has a path");
                (parents, last)
            }
        };
        let mut node = &mut *doc;
        for key in path {
            node = object(node, key)?
                .entry(key.clone())
                .or_insert_with(|| Value::Object(Default::default()));
        }
        let map = object(node, last)?;
        match edit {
            Edit::Set { value, .. } => {
                map.insert(last.clone(), value.clone());
            }
            Edit::Upsert { key, item, .. } => {
                let list = map
                    .entry(last.clone())
                    .or_insert_with(|| Value::Array(Vec::new()));
                let Value::Array(list) = list else {
                    return Err(Unparsable(format!("\"{last}\" is not a list")));
                };
                match list.iter_mut().find(|e| e.get(key) == item.get(key)) {
                    Some(existing) => *existing = item.clone(),
                    None => list.push(item.clone()),
                }
            }
        }
    }
    Ok(())
}

fn object<'a>(
    node: &'a mut Value,
    key: &str,
) -> std::result::Result<&'a mut serde_json::Map<String, Value>, Unparsable> {
    node.as_object_mut()
        .ok_or_else(|| Unparsable(format!("the parent of \"{key}\" is not a map")))
}

/// Applies `edits` to `old` (text of `syntax`), keeping everything else, and
/// verifies the result. `Err` with `CONFIG_FILE_UNPARSABLE` when `old` cannot be
/// edited; the caller then leaves the file alone.
pub fn apply(syntax: Syntax, old: &str, edits: &[Edit]) -> Result<String> {
    // A parser's message may quote the offending line, which may hold a key.
    let refuse = |Unparsable(why): Unparsable| {
        Error::invalid(
            codes::CONFIG_FILE_UNPARSABLE,
            format!(
                "the file does not parse as {}: {}",
                syntax_name(syntax),
                mask_keys(&why)
            ),
            "fix or move the file by hand; Gatehouse never rewrites a file it cannot parse",
        )
    };
    let mut expected = parse(syntax, old).map_err(refuse)?;
    apply_to_value(&mut expected, edits).map_err(refuse)?;
    let new = match syntax {
        Syntax::Json | Syntax::Jsonc => edit_json(old, edits, syntax == Syntax::Jsonc),
        Syntax::Toml => edit_toml(old, edits),
        Syntax::Yaml | Syntax::YamlFile => edit_yaml(old, edits),
    }
    .map_err(refuse)?;
    let got = parse(syntax, &new)
        .map_err(|Unparsable(e)| internal(format!("the edited file does not parse: {e}")))?;
    if got != expected {
        return Err(internal(format!(
            "editing the {} file changed more than the Gatehouse entry",
            syntax_name(syntax)
        )));
    }
    Ok(new)
}

/// Replaces every `gatehouse_sk_…` token whole: a parser's message quotes the
/// offending line, which may hold a key in any state of repair.
pub fn mask_keys(text: &str) -> String {
    const PREFIX: &str = "gatehouse_sk_";
    let mut out = String::with_capacity(text.len());
    let mut rest = text;
    while let Some(pos) = rest.find(PREFIX) {
        out.push_str(&rest[..pos]);
        out.push_str(super::REDACTED_KEY);
        let tail = &rest[pos + PREFIX.len()..];
        let end = tail
            .find(|c: char| !(c.is_ascii_alphanumeric() || c == '_'))
            .unwrap_or(tail.len());
        rest = &tail[end..];
    }
    out.push_str(rest);
    out
}

fn syntax_name(syntax: Syntax) -> &'static str {
    match syntax {
        Syntax::Json => "JSON",
        Syntax::Jsonc => "JSON with comments",
        Syntax::Toml => "TOML",
        Syntax::Yaml | Syntax::YamlFile => "YAML",
    }
}

// JSON -----------------------------------------------------------------------

fn edit_json(old: &str, edits: &[Edit], comments: bool) -> std::result::Result<String, Unparsable> {
    let options = if comments {
        ParseOptions::default()
    } else {
        ParseOptions {
            allow_comments: false,
            allow_loose_object_property_names: false,
            allow_trailing_commas: false,
            allow_missing_commas: false,
            allow_single_quoted_strings: false,
            allow_hexadecimal_numbers: false,
            allow_unary_plus_numbers: false,
            allow_bare_decimal_point_numbers: false,
            allow_extended_string_escapes: false,
            allow_non_finite_numbers: false,
        }
    };
    let root = CstRootNode::parse(old, &options).map_err(|e| Unparsable(e.to_string()))?;
    if root.value().is_some() && root.object_value().is_none() {
        return Err(Unparsable("the top level is not an object".into()));
    }
    let top = root.object_value_or_set();
    for edit in edits {
        let (path, last) = match edit {
            Edit::Set { path, .. } | Edit::Upsert { path, .. } => {
                let (last, parents) = path.split_last().expect("an edit has a path");
                (parents, last)
            }
        };
        let mut obj: CstObject = top.clone();
        for key in path {
            obj = obj
                .object_value_or_create(key)
                .ok_or_else(|| Unparsable(format!("\"{key}\" is not an object")))?;
        }
        match edit {
            Edit::Set { value, .. } => match obj.get(last) {
                Some(prop) => prop.set_value(cst_value(value)),
                None => {
                    obj.append(last, cst_value(value));
                }
            },
            Edit::Upsert { key, item, .. } => {
                let list = obj
                    .array_value_or_create(last)
                    .ok_or_else(|| Unparsable(format!("\"{last}\" is not a list")))?;
                let found = list.elements().into_iter().enumerate().find(|(_, e)| {
                    e.to_serde_value()
                        .is_some_and(|v| v.get(key.as_str()) == item.get(key.as_str()))
                });
                match found {
                    Some((index, element)) => {
                        element.remove();
                        list.insert(index, cst_value(item));
                    }
                    None => {
                        list.append(cst_value(item));
                    }
                }
            }
        }
    }
    let mut text = root.to_string();
    if !text.ends_with('\n') {
        text.push('\n');
    }
    Ok(text)
}

fn cst_value(value: &Value) -> CstInputValue {
    match value {
        Value::Null => CstInputValue::Null,
        Value::Bool(b) => CstInputValue::Bool(*b),
        Value::Number(n) => CstInputValue::Number(n.to_string()),
        Value::String(s) => CstInputValue::String(s.clone()),
        Value::Array(list) => CstInputValue::Array(list.iter().map(cst_value).collect()),
        Value::Object(map) => {
            CstInputValue::Object(map.iter().map(|(k, v)| (k.clone(), cst_value(v))).collect())
        }
    }
}

// TOML -----------------------------------------------------------------------

fn edit_toml(old: &str, edits: &[Edit]) -> std::result::Result<String, Unparsable> {
    let mut doc = toml_edit::DocumentMut::from_str(old).map_err(|e| Unparsable(e.to_string()))?;
    for edit in edits {
        let Edit::Set { path, value } = edit else {
            return Err(Unparsable("TOML files take no list edits".into()));
        };
        let (last, parents) = path.split_last().expect("an edit has a path");
        let mut table: &mut dyn toml_edit::TableLike = doc.as_table_mut();
        for key in parents {
            let item = table.entry(key).or_insert_with(|| {
                let mut t = toml_edit::Table::new();
                t.set_implicit(true);
                toml_edit::Item::Table(t)
            });
            table = item
                .as_table_like_mut()
                .ok_or_else(|| Unparsable(format!("\"{key}\" is not a table")))?;
        }
        let mut item = toml_item(value)?;
        // The comments above a replaced table (a file's header, when the
        // table comes first) belong to the file: they had gone with it.
        if let (Some(old), toml_edit::Item::Table(new)) = (
            table.get(last).and_then(toml_edit::Item::as_table),
            &mut item,
        ) {
            *new.decor_mut() = old.decor().clone();
            if let Some(at) = old.position() {
                new.set_position(Some(at));
            }
        }
        table.insert(last, item);
    }
    Ok(doc.to_string())
}

/// Objects become `[tables]`, everything inside arrays inline values.
fn toml_item(value: &Value) -> std::result::Result<toml_edit::Item, Unparsable> {
    Ok(match value {
        Value::Object(map) => {
            let mut table = toml_edit::Table::new();
            // Plain keys first: TOML cannot put one after a sub-table.
            let (tables, plain): (Vec<_>, Vec<_>) = map.iter().partition(|(_, v)| v.is_object());
            for (k, v) in plain.into_iter().chain(tables) {
                table.insert(k, toml_item(v)?);
            }
            toml_edit::Item::Table(table)
        }
        other => toml_edit::Item::Value(toml_value(other)?),
    })
}

fn toml_value(value: &Value) -> std::result::Result<toml_edit::Value, Unparsable> {
    Ok(match value {
        Value::Null => return Err(Unparsable("TOML has no null".into())),
        Value::Bool(b) => (*b).into(),
        Value::Number(n) => match n.as_i64() {
            Some(i) => i.into(),
            None => n.as_f64().unwrap_or_default().into(),
        },
        Value::String(s) => s.as_str().into(),
        Value::Array(list) => {
            let mut array = toml_edit::Array::new();
            for v in list {
                array.push(toml_value(v)?);
            }
            toml_edit::Value::Array(array)
        }
        Value::Object(map) => {
            let mut table = toml_edit::InlineTable::new();
            for (k, v) in map {
                table.insert(k, toml_value(v)?);
            }
            toml_edit::Value::InlineTable(table)
        }
    })
}

// YAML -----------------------------------------------------------------------

fn edit_yaml(old: &str, edits: &[Edit]) -> std::result::Result<String, Unparsable> {
    if old.trim().is_empty() {
        // Nothing to keep: render the whole document.
        let mut doc = Value::Object(Default::default());
        apply_to_value(&mut doc, edits)?;
        return serde_yaml_ng::to_string(&doc).map_err(|e| Unparsable(e.to_string()));
    }
    let doc = yaml_edit::Document::from_str(old).map_err(|e| Unparsable(e.to_string()))?;
    let Some(top) = doc.as_mapping() else {
        return Err(Unparsable("the top level is not a map".into()));
    };
    // The parsed document as it stands before each edit: where an upsert's
    // item already is, read with the ordinary parser rather than from nodes.
    let mut current = parse(Syntax::Yaml, old)?;
    for edit in edits {
        let (path, last) = match edit {
            Edit::Set { path, .. } | Edit::Upsert { path, .. } => {
                let (last, parents) = path.split_last().expect("an edit has a path");
                (parents, last)
            }
        };
        let mut map = top.clone();
        for key in path {
            map = match map.get(key.as_str()) {
                Some(node) => node
                    .as_mapping()
                    .cloned()
                    .ok_or_else(|| Unparsable(format!("\"{key}\" is not a map")))?,
                None => {
                    map.set(
                        key.as_str(),
                        yaml_value(&Value::Object(Default::default()))?,
                    );
                    map.get_mapping(key.as_str())
                        .ok_or_else(|| Unparsable(format!("cannot create \"{key}\"")))?
                }
            };
        }
        match edit {
            Edit::Set { value, .. } => map.set(last.as_str(), yaml_value(value)?),
            Edit::Upsert {
                path: full,
                key,
                item,
            } => match map.get(last.as_str()) {
                None => map.set(
                    last.as_str(),
                    yaml_value(&Value::Array(vec![item.clone()]))?,
                ),
                Some(node) => {
                    let list = node
                        .as_sequence()
                        .cloned()
                        .ok_or_else(|| Unparsable(format!("\"{last}\" is not a list")))?;
                    let index = full
                        .iter()
                        .try_fold(&current, |v, k| v.get(k))
                        .and_then(Value::as_array)
                        .and_then(|l| l.iter().position(|e| e.get(key) == item.get(key)));
                    match index {
                        Some(i) => {
                            list.set(i, yaml_value(item)?);
                        }
                        None => list.push(yaml_value(item)?),
                    }
                }
            },
        }
        apply_to_value(&mut current, std::slice::from_ref(edit))?;
    }
    // An item pushed at the very end comes out without the file's last newline.
    let mut text = doc.to_string();
    if old.ends_with('\n') && !text.ends_with('\n') {
        text.push('\n');
    }
    Ok(text)
}

/// A value as a yaml-edit node, by way of its own block-style rendering.
fn yaml_value(value: &Value) -> std::result::Result<yaml_edit::Document, Unparsable> {
    let text = serde_yaml_ng::to_string(value).map_err(|e| Unparsable(e.to_string()))?;
    yaml_edit::Document::from_str(&text).map_err(|e| Unparsable(e.to_string()))
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn set(path: &[&str], value: Value) -> Edit {
        Edit::Set {
            path: path.iter().map(|s| s.to_string()).collect(),
            value,
        }
    }

    fn entry() -> Value {
        json!({"command": "/bin/gatehouse", "args": ["mcp", "--site", "/s"], "env": {"K": "v"}})
    }

    /// Applies the edits twice: the second pass must change nothing.
    fn apply_twice(syntax: Syntax, old: &str, edits: &[Edit]) -> String {
        let once = apply(syntax, old, edits).unwrap();
        let twice = apply(syntax, &once, edits).unwrap();
        assert_eq!(once, twice, "a second apply is not idempotent");
        once
    }

    #[test]
    fn jsonc_keeps_comments_and_other_servers() {
        let old = "{\n  // my servers\n  \"theme\": \"dark\", /* inline */\n  \"servers\": {\n    \"other\": { \"command\": \"x\" }, // keep me\n  },\n}\n";
        let new = apply_twice(
            Syntax::Jsonc,
            old,
            &[set(&["servers", "gatehouse"], entry())],
        );
        for kept in ["// my servers", "/* inline */", "// keep me", "\"other\""] {
            assert!(new.contains(kept), "{kept} lost:\n{new}");
        }
        let doc = parse(Syntax::Jsonc, &new).unwrap();
        assert_eq!(doc["servers"]["gatehouse"], entry());
        assert_eq!(doc["servers"]["other"]["command"], "x");
    }

    #[test]
    fn json_replaces_an_old_entry_in_place() {
        let old = "{\n  \"mcpServers\": {\n    \"a\": {\"command\": \"a\"},\n    \"gatehouse\": {\"command\": \"old\"},\n    \"z\": {\"command\": \"z\"}\n  }\n}\n";
        let new = apply_twice(
            Syntax::Json,
            old,
            &[set(&["mcpServers", "gatehouse"], entry())],
        );
        let a = new.find("\"a\"").unwrap();
        let g = new.find("\"gatehouse\"").unwrap();
        let z = new.find("\"z\"").unwrap();
        assert!(a < g && g < z, "order changed:\n{new}");
        assert!(!new.contains("old"));
    }

    #[test]
    fn strict_json_refuses_comments_and_non_objects() {
        for old in ["{ // c\n}", "[1, 2]", "{\"a\": ", "{\"mcpServers\": 3}"] {
            let err = apply(Syntax::Json, old, &[set(&["mcpServers", "g"], entry())]).unwrap_err();
            assert_eq!(err.code, codes::CONFIG_FILE_UNPARSABLE, "{old}");
        }
    }

    #[test]
    fn upsert_replaces_by_id_or_appends() {
        let old = "{\n  \"inputs\": [\n    {\"id\": \"x\", \"type\": \"promptString\"},\n    {\"id\": \"g\", \"type\": \"old\"}\n  ]\n}\n";
        let item = json!({"id": "g", "type": "promptString", "password": true});
        let edit = Edit::Upsert {
            path: vec!["inputs".into()],
            key: "id".into(),
            item: item.clone(),
        };
        let new = apply_twice(Syntax::Jsonc, old, std::slice::from_ref(&edit));
        let doc = parse(Syntax::Jsonc, &new).unwrap();
        assert_eq!(
            doc["inputs"],
            json!([{"id": "x", "type": "promptString"}, item])
        );
        let fresh = apply_twice(Syntax::Jsonc, "", &[edit]);
        assert_eq!(
            parse(Syntax::Jsonc, &fresh).unwrap()["inputs"][0]["id"],
            "g"
        );
    }

    #[test]
    fn toml_keeps_comments_and_tables() {
        let old = "# Codex settings\nmodel = \"o3\" # favourite\n\n[mcp_servers.other]\ncommand = \"x\"\n";
        let new = apply_twice(
            Syntax::Toml,
            old,
            &[set(&["mcp_servers", "gatehouse"], entry())],
        );
        assert!(
            new.contains("# Codex settings") && new.contains("# favourite"),
            "{new}"
        );
        assert!(new.contains("[mcp_servers.gatehouse]"), "{new}");
        let doc = parse(Syntax::Toml, &new).unwrap();
        assert_eq!(doc["mcp_servers"]["gatehouse"], entry());
        assert_eq!(doc["mcp_servers"]["other"]["command"], "x");
        assert_eq!(
            apply(Syntax::Toml, "a = ", &[]).unwrap_err().code,
            codes::CONFIG_FILE_UNPARSABLE
        );
    }

    /// A file whose first table is the entry: its header comment is the
    /// table's prefix, and replacing the table had dropped it.
    #[test]
    fn toml_keeps_the_comments_above_a_replaced_table() {
        let old = "# My Codex settings: keep this header\n\n[mcp_servers.gatehouse]\ncommand = \"old\"\n\n[mcp_servers.other]\ncommand = \"x\"\n";
        let new = apply_twice(
            Syntax::Toml,
            old,
            &[set(&["mcp_servers", "gatehouse"], entry())],
        );
        assert!(
            new.starts_with("# My Codex settings: keep this header\n"),
            "{new}"
        );
        let doc = parse(Syntax::Toml, &new).unwrap();
        assert_eq!(doc["mcp_servers"]["gatehouse"], entry());
        assert_eq!(doc["mcp_servers"]["other"]["command"], "x");
    }

    #[test]
    fn yaml_keeps_comments_and_other_extensions() {
        let old = "# goose config\nGOOSE_PROVIDER: openai # provider\nextensions:\n  developer:\n    enabled: true\n    type: builtin\n    name: developer\n";
        let new = apply_twice(
            Syntax::Yaml,
            old,
            &[set(&["extensions", "gatehouse"], entry())],
        );
        assert!(
            new.contains("# goose config") && new.contains("# provider"),
            "{new}"
        );
        let doc = parse(Syntax::Yaml, &new).unwrap();
        assert_eq!(doc["extensions"]["gatehouse"], entry());
        assert_eq!(doc["extensions"]["developer"]["type"], "builtin");
        assert_eq!(doc["GOOSE_PROVIDER"], "openai");

        let fresh = apply_twice(
            Syntax::Yaml,
            "",
            &[set(&["extensions", "gatehouse"], entry())],
        );
        assert_eq!(
            parse(Syntax::Yaml, &fresh).unwrap()["extensions"]["gatehouse"],
            entry()
        );
        let err = apply(Syntax::Yaml, "a: [1,\n", &[]).unwrap_err();
        assert_eq!(err.code, codes::CONFIG_FILE_UNPARSABLE);
    }
}

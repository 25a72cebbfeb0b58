//! The layer order `lib.rs` states, held as a test: every `crate::` path (and
//! every `super::` chain that climbs to the crate root) in non-test code must
//! name a tree of its own layer or one below.
//!
//! The order is read from the `lib.rs` doc itself, so the map and the check
//! cannot drift apart; a new top-level module fails until the doc places it.
//! A text scan rather than a parser: imports are one-line shapes here, and a
//! shape the scan misreads shows up as a false failure, never a silent pass.

use std::path::{Path, PathBuf};

/// The layers, bottom up, as the `lib.rs` doc lists them (`→` between layers,
/// commas within one).
fn stated_layers(lib: &str) -> Vec<Vec<String>> {
    let doc: Vec<&str> = lib
        .lines()
        .filter_map(|l| l.trim_start().strip_prefix("//!"))
        .map(str::trim)
        .collect();
    let start = doc
        .iter()
        .position(|l| l.starts_with("Layers, bottom up"))
        .expect("lib.rs states the layers");
    let paragraph = doc[start..]
        .iter()
        .take_while(|l| !l.is_empty())
        .copied()
        .collect::<Vec<_>>()
        .join(" ");
    let first_arrow = paragraph.find('→').expect("the layers are joined by →");
    let list_start = paragraph[..first_arrow]
        .rfind(':')
        .expect("a colon opens the list")
        + 1;
    paragraph[list_start..]
        .split('→')
        .map(|layer| {
            layer
                .split('`')
                .skip(1)
                .step_by(2)
                .map(str::to_string)
                .collect()
        })
        .collect()
}

/// The modules `lib.rs` declares, and the other root names with the module
/// each comes from (empty for a function of the root itself).
fn root_names(lib: &str) -> (Vec<String>, Vec<(String, String)>) {
    let mut modules = Vec::new();
    let mut reexports = Vec::new();
    let mut cfg_test = false;
    for line in lib.lines().map(str::trim) {
        if line == "#[cfg(test)]" {
            cfg_test = true;
            continue;
        }
        let item = line.strip_prefix("pub ").unwrap_or(line);
        if let Some(name) = item.strip_prefix("mod ").and_then(|m| m.strip_suffix(';')) {
            if !cfg_test {
                modules.push(name.to_string());
            }
        } else if let Some(rest) = item.strip_prefix("fn ") {
            // A root function (`version`) belongs to no tree: the bottom.
            let name = rest.split('(').next().unwrap_or_default();
            reexports.push((name.to_string(), String::new()));
        } else if let Some((module, names)) = item
            .strip_prefix("use ")
            .and_then(|rest| rest.split_once("::"))
        {
            let names = names
                .trim_end_matches(';')
                .trim_matches(|c| c == '{' || c == '}');
            for name in names.split(',').map(str::trim).filter(|n| !n.is_empty()) {
                reexports.push((name.to_string(), module.to_string()));
            }
        }
        cfg_test = false;
    }
    (modules, reexports)
}

/// The source with test-only items (`#[cfg(test)]` on the next item) and
/// comment lines removed.
fn non_test_code(src: &str) -> String {
    let mut out = String::new();
    let mut lines = src.lines();
    while let Some(line) = lines.next() {
        let t = line.trim();
        if t.starts_with("//") {
            continue;
        }
        if t != "#[cfg(test)]" {
            out.push_str(line);
            out.push('\n');
            continue;
        }
        // Skip the next item: further attributes, then one line ending in `;`
        // or a braced block.
        let mut depth = 0i32;
        let mut opened = false;
        for l in lines.by_ref() {
            let t = l.trim();
            if !opened && (t.starts_with("#[") || t.is_empty()) {
                continue;
            }
            for c in l.chars() {
                match c {
                    '{' => {
                        depth += 1;
                        opened = true;
                    }
                    '}' => depth -= 1,
                    _ => {}
                }
            }
            if (opened && depth <= 0) || (!opened && t.ends_with(';')) {
                break;
            }
        }
    }
    out
}

/// The crate-root names a file's code reaches: `crate::x`, `crate::{x, y::z}`,
/// then (flagged `true`) `super::` chains as long as the file's module path;
/// inside an inline module such a chain names a sibling, not a root item, so
/// only a tree's name counts there.
fn reached(code: &str, depth: usize) -> Vec<(String, bool)> {
    let mut names = Vec::new();
    let ident = |s: &str| -> String {
        s.trim_start()
            .chars()
            .take_while(|c| c.is_alphanumeric() || *c == '_')
            .collect()
    };
    let bytes = code.as_bytes();
    for (i, _) in code.match_indices("crate::") {
        if i > 0
            && (bytes[i - 1] == b'$'
                || bytes[i - 1].is_ascii_alphanumeric()
                || bytes[i - 1] == b'_')
        {
            continue;
        }
        let rest = &code[i + "crate::".len()..];
        if let Some(group) = rest.strip_prefix('{') {
            let mut level = 0;
            let mut start = 0;
            for (k, c) in group.char_indices() {
                match c {
                    '{' => level += 1,
                    '}' if level == 0 => {
                        names.push(ident(&group[start..k]));
                        break;
                    }
                    '}' => level -= 1,
                    ',' if level == 0 => {
                        names.push(ident(&group[start..k]));
                        start = k + 1;
                    }
                    _ => {}
                }
            }
        } else {
            names.push(ident(rest));
        }
    }
    let mut names: Vec<(String, bool)> = names.into_iter().map(|n| (n, false)).collect();
    if depth > 0 {
        let climb = "super::".repeat(depth);
        for (i, _) in code.match_indices(&climb) {
            if i > 0 && code[..i].ends_with("super::") {
                continue;
            }
            let rest = &code[i + climb.len()..];
            if !rest.starts_with("super::") {
                names.push((ident(rest), true));
            }
        }
    }
    names.retain(|(n, _)| !n.is_empty() && n != "self");
    names
}

/// Every source file under `dir` with its module path from the crate root,
/// leaving out files that only a `#[cfg(test)] mod x;` declares.
fn source_files(src: &Path) -> Vec<(PathBuf, Vec<String>)> {
    let mut out = Vec::new();
    let mut stack = vec![(src.to_path_buf(), Vec::<String>::new())];
    while let Some((dir, path)) = stack.pop() {
        for entry in std::fs::read_dir(&dir).expect("read src") {
            let p = entry.expect("dir entry").path();
            let name = p.file_stem().unwrap().to_string_lossy().to_string();
            if p.is_dir() {
                let mut sub = path.clone();
                sub.push(name);
                stack.push((p, sub));
            } else if p.extension().is_some_and(|e| e == "rs") {
                let mut module = path.clone();
                if name != "mod" && name != "lib" {
                    module.push(name);
                }
                out.push((p, module));
            }
        }
    }
    let test_only: Vec<Vec<String>> = out
        .iter()
        .flat_map(|(p, module)| {
            let src = std::fs::read_to_string(p).expect("read source");
            let lines: Vec<&str> = src.lines().map(str::trim).collect();
            lines
                .windows(2)
                .filter(|w| w[0] == "#[cfg(test)]")
                .filter_map(|w| w[1].strip_prefix("mod ").and_then(|m| m.strip_suffix(';')))
                .map(|m| {
                    let mut child = module.clone();
                    child.push(m.to_string());
                    child
                })
                .collect::<Vec<_>>()
        })
        .collect();
    out.retain(|(_, module)| !test_only.iter().any(|t| module.starts_with(t)));
    out
}

/// The imports that reach above their file's layer, as `file: tree → name`.
fn violations(
    layers: &[Vec<String>],
    reexports: &[(String, String)],
    files: &[(String, Vec<String>, String)],
) -> Vec<String> {
    let layer_of = |name: &str| -> Option<usize> {
        let module = reexports
            .iter()
            .find(|(n, _)| n == name)
            .map_or(name, |(_, m)| m.as_str());
        if module.is_empty() {
            return Some(0);
        }
        layers.iter().position(|l| l.iter().any(|m| m == module))
    };
    let mut found = Vec::new();
    for (file, module, src) in files {
        let Some(own) = module.first() else { continue };
        let own_layer = layer_of(own).unwrap_or_else(|| panic!("{own} is in no stated layer"));
        for (name, by_super) in reached(&non_test_code(src), module.len()) {
            match layer_of(&name) {
                Some(l) if l > own_layer => found.push(format!("{file}: {own} → {name}")),
                Some(_) => {}
                None if by_super => {}
                None => found.push(format!("{file}: {own} → {name} (in no stated layer)")),
            }
        }
    }
    found
}

#[test]
fn every_module_imports_only_its_layer_and_those_below() {
    let lib = include_str!("lib.rs");
    let layers = stated_layers(lib);
    let (modules, reexports) = root_names(lib);
    for m in &modules {
        assert!(
            layers.iter().flatten().any(|l| l == m),
            "lib.rs declares `{m}` but its layer list does not place it"
        );
    }
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    let files: Vec<(String, Vec<String>, String)> = source_files(&src)
        .into_iter()
        .map(|(p, module)| {
            let text = std::fs::read_to_string(&p).expect("read source");
            let shown = p.strip_prefix(&src).unwrap().display().to_string();
            (shown, module, text)
        })
        .collect();
    assert!(
        files.len() > 100,
        "the scan found the sources ({})",
        files.len()
    );
    let found = violations(&layers, &reexports, &files);
    assert!(
        found.is_empty(),
        "imports from a higher layer:\n{}",
        found.join("\n")
    );
}

#[test]
fn the_check_flags_upward_imports_and_spares_tests_and_comments() {
    let layers = stated_layers(include_str!("lib.rs"));
    let (_, reexports) = root_names(include_str!("lib.rs"));
    let file = |module: &[&str], src: &str| {
        (
            module.join("/"),
            module.iter().map(|s| s.to_string()).collect::<Vec<_>>(),
            src.to_string(),
        )
    };
    let files = vec![
        file(&["store", "a"], "use crate::access::audit;\n"),
        file(&["store", "b"], "use crate::{error::Error, site::Site};\n"),
        file(&["store", "c"], "fn f() { super::super::mcp::x(); }\n"),
        file(
            &["store", "d"],
            "// crate::mcp in a comment\nuse crate::Error;\n#[cfg(test)]\nmod tests {\n    use crate::access;\n}\n",
        ),
        file(&["connections"], "use crate::mcp::client::Connection;\n"),
    ];
    assert_eq!(
        violations(&layers, &reexports, &files),
        [
            "store/a: store → access",
            "store/b: store → site",
            "store/c: store → mcp"
        ]
    );
}

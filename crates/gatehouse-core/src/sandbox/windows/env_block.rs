//! The child's environment on Windows: exactly the spec's variables plus
//! what Windows needs (see [`windows_additions`]), as the UTF-16 block
//! `CreateProcessAsUserW` takes. Pure, tested on every system.

use std::collections::BTreeMap;

use crate::error::{Error, Result, codes};

/// `PATH` inside the sandbox on Windows unless the connection lists its own
/// (`%SystemRoot%` expanded by [`windows_additions`]' caller).
pub fn default_path(system_root: &str) -> String {
    format!(r"{system_root}\System32;{system_root};{system_root}\System32\Wbem")
}

/// What Windows itself needs for a process to start and work, beside the
/// spec's variables (each one the spec may override by listing it):
/// - `SystemRoot`: the host's value; Winsock, the C runtime's crypto and
///   many system DLLs fail without it;
/// - `TEMP` and `TMP`: the scratch directory (`GetTempPath` reads them, and
///   scratch is the one place a restricted child may write);
/// - `USERPROFILE`: the scratch directory, what `HOME` means on Windows
///   (the spec already points `HOME` there).
pub fn windows_additions(system_root: &str, scratch: &str) -> Vec<(String, String)> {
    vec![
        ("SystemRoot".to_string(), system_root.to_string()),
        ("TEMP".to_string(), scratch.to_string()),
        ("TMP".to_string(), scratch.to_string()),
        ("USERPROFILE".to_string(), scratch.to_string()),
    ]
}

/// Merges `base` with `over` (whose entries win), comparing names as Windows
/// does (case-insensitively: `Path` and `PATH` are one variable), and sorts
/// the result by upper-cased name, the order Windows expects of a block.
pub fn merge(base: Vec<(String, String)>, over: Vec<(String, String)>) -> Vec<(String, String)> {
    let mut map: BTreeMap<String, (String, String)> = BTreeMap::new();
    for (name, value) in base.into_iter().chain(over) {
        map.insert(name.to_uppercase(), (name, value));
    }
    map.into_values().collect()
}

/// The UTF-16 environment block: `NAME=VALUE\0` per variable, sorted as
/// [`merge`] sorts, then one more `\0`. Refuses names Windows would misread
/// (empty, holding `=` or NUL) and values holding NUL.
pub fn block(vars: &[(String, String)]) -> Result<Vec<u16>> {
    let mut out = Vec::new();
    for (name, value) in vars {
        if name.is_empty() || name.contains('=') || name.contains('\0') {
            return Err(Error::invalid(
                codes::ENV_INVALID,
                format!("{name:?} is not a valid environment variable name"),
                "use a name without '=' or NUL, for example API_TOKEN",
            ));
        }
        if value.contains('\0') {
            return Err(Error::invalid(
                codes::ENV_INVALID,
                format!("the value of {name} contains a NUL byte"),
                "environment values cannot contain NUL",
            ));
        }
        out.extend(name.encode_utf16());
        out.push(u16::from(b'='));
        out.extend(value.encode_utf16());
        out.push(0);
    }
    if vars.is_empty() {
        // An empty block is two NULs.
        out.push(0);
    }
    out.push(0);
    Ok(out)
}

/// The variables of a block, in order (for tests and for checking what a
/// child was given).
pub fn parse_block(block: &[u16]) -> Vec<(String, String)> {
    block
        .split(|c| *c == 0)
        .take_while(|s| !s.is_empty())
        .map(|s| {
            let text = String::from_utf16_lossy(s);
            match text.split_once('=') {
                Some((n, v)) => (n.to_string(), v.to_string()),
                None => (text, String::new()),
            }
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn kv(pairs: &[(&str, &str)]) -> Vec<(String, String)> {
        pairs
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect()
    }

    #[test]
    fn the_block_holds_exactly_the_merged_variables_sorted_case_insensitively() {
        let scratch = r"C:\Users\Zoë Doe\AppData\Local\Gatehouse\scratch\c-1-2-3";
        let base = windows_additions(r"C:\Windows", scratch);
        let spec = kv(&[
            ("Path", r"C:\Program Files\nodejs"),
            ("api_token", "s3cret"),
            ("TEMP", r"D:\tmp"),
        ]);
        let vars = merge(base, spec);
        let names: Vec<&str> = vars.iter().map(|(n, _)| n.as_str()).collect();
        assert_eq!(
            names,
            [
                "api_token",
                "Path",
                "SystemRoot",
                "TEMP",
                "TMP",
                "USERPROFILE"
            ]
        );
        let b = block(&vars).unwrap();
        assert_eq!(&b[b.len() - 2..], &[0, 0], "ends with an empty string");
        let back = parse_block(&b);
        assert_eq!(back, vars);
        // The spec's value won over the addition, and non-ASCII survived.
        assert!(back.contains(&("TEMP".into(), r"D:\tmp".into())));
        assert!(back.contains(&("USERPROFILE".into(), scratch.into())));
    }

    #[test]
    fn a_differently_cased_name_replaces_rather_than_duplicates() {
        let vars = merge(kv(&[("PATH", "a")]), kv(&[("Path", "b")]));
        assert_eq!(vars, kv(&[("Path", "b")]));
    }

    #[test]
    fn names_and_values_windows_would_misread_are_refused() {
        for bad in [kv(&[("", "v")]), kv(&[("A=B", "v")]), kv(&[("A", "x\0y")])] {
            let e = block(&bad).expect_err(&format!("{bad:?}"));
            assert_eq!(e.code, codes::ENV_INVALID);
        }
        assert_eq!(block(&[]).unwrap(), vec![0, 0]);
    }

    #[test]
    fn the_default_path_is_the_system_folders_only() {
        assert_eq!(
            default_path(r"C:\Windows"),
            r"C:\Windows\System32;C:\Windows;C:\Windows\System32\Wbem"
        );
    }
}

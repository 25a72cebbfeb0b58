//! Printing results and errors.

use std::io::Write;
use std::process::ExitCode;

use gatehouse_core::Error;

/// Prints a result to stdout (nothing for an empty result).
pub fn print(text: &str) {
    if text.is_empty() {
        return;
    }
    let mut out = std::io::stdout().lock();
    // Text from the site or a connected server may hold terminal escapes
    // (OSC 52 clipboard writes, cursor moves) or bidi overrides: show them.
    let text = gatehouse_core::text::escape_controls(text.trim_end_matches('\n'));
    let _ = writeln!(out, "{text}");
}

/// Prints an error to stderr and returns the failing exit code. stdout stays clean.
pub fn fail(err: &Error, json: bool) -> ExitCode {
    let mut e = std::io::stderr().lock();
    if json {
        let body = serde_json::json!({"error": err.body()}).to_string();
        let _ = writeln!(e, "{}", gatehouse_core::text::escape_controls(&body));
    } else {
        let message = gatehouse_core::text::escape_controls(&err.message);
        let _ = writeln!(e, "error[{}]: {message}", err.code);
        if let Some(hint) = &err.hint {
            let _ = writeln!(e, "  hint: {}", gatehouse_core::text::escape_controls(hint));
        }
    }
    ExitCode::FAILURE
}

/// Reports a command line clap refused. Help and `--version` print as clap
/// prints them; a usage error asked for `--json` is one `INPUT_INVALID` object
/// like every other error, with clap's text cut into message and hint, and
/// clap's exit code either way.
pub fn parse_failed(err: &clap::Error, json: bool) -> ExitCode {
    let code = ExitCode::from(u8::try_from(err.exit_code()).unwrap_or(2));
    if !json || !err.use_stderr() {
        let _ = err.print();
        return code;
    }
    let text = err.render().to_string();
    let (first, rest) = text.trim().split_once('\n').unwrap_or((text.trim(), ""));
    let message = first.strip_prefix("error: ").unwrap_or(first);
    let mut e = Error::new(gatehouse_core::error::codes::INPUT_INVALID, message);
    let rest = rest.trim();
    if !rest.is_empty() {
        e = e.hint(rest);
    }
    fail(&e, true);
    code
}

pub fn to_json(value: &impl serde::Serialize) -> String {
    serde_json::to_string_pretty(value).expect("results serialise")
}

/// A plain text table with left-aligned columns.
pub fn table(header: &[&str], rows: Vec<Vec<String>>) -> String {
    let mut widths: Vec<usize> = header.iter().map(|h| h.len()).collect();
    for row in &rows {
        for (w, cell) in widths.iter_mut().zip(row) {
            *w = (*w).max(cell.chars().count());
        }
    }
    let line = |cells: Vec<String>| {
        cells
            .iter()
            .zip(&widths)
            .map(|(c, w)| format!("{c:<w$}"))
            .collect::<Vec<_>>()
            .join("  ")
            .trim_end()
            .to_string()
    };
    let mut out = vec![line(header.iter().map(|h| h.to_uppercase()).collect())];
    out.extend(rows.into_iter().map(line));
    out.join("\n")
}

/// The usage columns `keys list --usage` and `oauth grants --usage` both print.
pub const USAGE_HEADER: [&str; 6] = [
    "last call",
    "from",
    "24h",
    "7d",
    "refused 7d",
    "by tool (7d)",
];

/// One key's or grant's usage as the cells under [`USAGE_HEADER`].
pub fn usage_cells(u: &gatehouse_core::access::key_usage::KeyUsage) -> [String; 6] {
    let dash = || "-".to_string();
    [
        u.last_call_at
            .map(gatehouse_core::time::rfc3339)
            .unwrap_or_else(dash),
        u.last_from.clone().unwrap_or_else(dash),
        u.calls_day.to_string(),
        u.calls_week.to_string(),
        u.refused_week.to_string(),
        u.by_tool
            .iter()
            .map(|t| format!("{} {}", t.tool, t.week))
            .collect::<Vec<_>>()
            .join(", "),
    ]
}

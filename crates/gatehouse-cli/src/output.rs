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
    let _ = writeln!(out, "{}", text.trim_end_matches('\n'));
}

/// Prints an error to stderr and returns the failing exit code. stdout stays clean.
pub fn fail(err: &Error, json: bool) -> ExitCode {
    let mut e = std::io::stderr().lock();
    if json {
        let _ = writeln!(e, "{}", serde_json::json!({"error": err.body()}));
    } else {
        let _ = writeln!(e, "error[{}]: {}", err.code, err.message);
        if let Some(hint) = &err.hint {
            let _ = writeln!(e, "  hint: {hint}");
        }
    }
    ExitCode::FAILURE
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

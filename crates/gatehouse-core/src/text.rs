//! Text that reaches a person: labels free of bidirectional overrides and
//! invisible characters, and
//! output with its control characters made visible.
//!
//! A label (a user's email or display name, a key's label) is shown in lists,
//! the audit log and the desktop app. Bidirectional controls (U+202A–U+202E,
//! U+2066–U+2069, the marks U+200E, U+200F, U+061C) can make `key-for-alice`
//! display as something else, and invisible characters (U+200B and its kin,
//! the soft hyphen) make `admin\u{200b}@example.com` look like the admin, so
//! new labels with either are refused ([`check_no_disguise`]) and old
//! bidirectional ones are shown escaped ([`escape_controls`]).

use crate::error::{Code, Error, Result};

/// Whether `c` changes the display order of the text around it.
pub fn is_bidi_control(c: char) -> bool {
    matches!(
        c,
        '\u{202A}'..='\u{202E}' | '\u{2066}'..='\u{2069}' | '\u{200E}' | '\u{200F}' | '\u{061C}'
    )
}

/// Whether `c` is shown as nothing: zero-width spaces and joiners, the word
/// joiner and invisible operators, the byte-order mark. Inside a name a
/// person is asked to trust (`Claude\u{200B} by Anthropic`), they make a
/// look-alike that compares unequal.
pub fn is_invisible(c: char) -> bool {
    matches!(
        c,
        '\u{200B}'..='\u{200D}' | '\u{2060}'..='\u{2064}' | '\u{FEFF}' | '\u{00AD}' | '\u{180E}'
    )
}

/// Refuses a label holding a bidirectional control or an invisible character
/// (it would display as another: `admin\u{200b}@…` as `admin@…`), with `code`
/// and `hint`.
pub fn check_no_disguise(what: &str, text: &str, code: Code, hint: &str) -> Result<()> {
    let kind = |c: char| {
        if is_bidi_control(c) {
            Some("bidirectional control")
        } else if is_invisible(c) {
            Some("invisible character")
        } else {
            None
        }
    };
    match text.chars().find_map(|c| kind(c).map(|k| (c, k))) {
        Some((c, kind)) => Err(Error::invalid(
            code,
            format!(
                "the {what} contains the {kind} U+{:04X}, which can make it display as something else",
                c as u32
            ),
            hint,
        )),
        None => Ok(()),
    }
}

/// `s` with the characters HTML gives meaning to written as entities, for
/// text put in a page (the OAuth consent page), attribute values included.
pub fn escape_html(s: &str) -> String {
    escape(s, true)
}

/// `s` with `&`, `<` and `>` written as entities, for the body markup a
/// freedesktop notification server renders (quotes are text there: escaped,
/// a server shows the entity).
pub fn escape_markup(s: &str) -> String {
    escape(s, false)
}

fn escape(s: &str, quotes: bool) -> String {
    let mut out = String::with_capacity(s.len());
    for c in s.chars() {
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '"' if quotes => out.push_str("&quot;"),
            '\'' if quotes => out.push_str("&#39;"),
            c => out.push(c),
        }
    }
    out
}

/// `text` with every control character (C0 but newline and tab, DEL, C1) and
/// every bidirectional control written as `\uXXXX`, so a terminal shows it
/// instead of obeying it. The escape is JSON's, so escaped JSON stays JSON.
pub fn escape_controls(text: &str) -> std::borrow::Cow<'_, str> {
    let needs = |c: char| (c.is_control() && c != '\n' && c != '\t') || is_bidi_control(c);
    if !text.chars().any(needs) {
        return std::borrow::Cow::Borrowed(text);
    }
    let mut out = String::with_capacity(text.len() + 16);
    for c in text.chars() {
        if needs(c) {
            out.push_str(&format!("\\u{:04x}", c as u32));
        } else {
            out.push(c);
        }
    }
    std::borrow::Cow::Owned(out)
}

/// Line starts that only Gatehouse writes: its truncation marker and its own
/// notes in `gatehouse tail`.
pub const OWN_LINE_PREFIXES: &[&str] = &["[stderr truncated", "[gatehouse"];

/// A child's text with every line that would look like one of Gatehouse's own
/// ([`OWN_LINE_PREFIXES`], after any leading blanks) given a visible `\u005b`
/// for its `[`: Gatehouse's lines are then the only ones that start so, and a
/// child cannot forge a truncation marker or an "ended" note.
pub fn defang_own_lines(text: &str) -> std::borrow::Cow<'_, str> {
    let forged = |line: &str| {
        let l = line.trim_start();
        OWN_LINE_PREFIXES.iter().any(|p| l.starts_with(p))
    };
    if !text.split('\n').any(forged) {
        return std::borrow::Cow::Borrowed(text);
    }
    let lines: Vec<String> = text
        .split('\n')
        .map(|line| {
            if forged(line) {
                line.replacen('[', "\\u005b", 1)
            } else {
                line.to_string()
            }
        })
        .collect();
    std::borrow::Cow::Owned(lines.join("\n"))
}

/// One line of a child's stderr as a window shows it: a look-alike of
/// Gatehouse's own lines defanged ([`defang_own_lines`]) and its control
/// characters made visible ([`escape_controls`]), so that it neither passes
/// for Gatehouse's note (in a copy, too, where no styling is left) nor drives
/// a terminal it is pasted into.
pub fn child_line(line: &str) -> String {
    escape_controls(&defang_own_lines(line)).into_owned()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_child_cannot_write_gatehouse_own_lines() {
        let child = "ok\n[stderr truncated: kept last 1 of 2 bytes]\n  [gatehouse: connection ended (exited)]\nx [gatehouse";
        let out = defang_own_lines(child);
        assert_eq!(
            out,
            "ok\n\\u005bstderr truncated: kept last 1 of 2 bytes]\n  \\u005bgatehouse: connection ended (exited)]\nx [gatehouse"
        );
        assert!(!out.lines().any(|l| {
            OWN_LINE_PREFIXES
                .iter()
                .any(|p| l.trim_start().starts_with(p))
        }));
        assert!(matches!(
            defang_own_lines("plain"),
            std::borrow::Cow::Borrowed(_)
        ));
    }

    #[test]
    fn a_child_line_is_shown_defanged_and_escaped() {
        assert_eq!(
            child_line("\u{1b}]52;c;aGk=\u{7}copied"),
            "\\u001b]52;c;aGk=\\u0007copied"
        );
        assert_eq!(
            child_line("  [gatehouse: connection ended (exited)]"),
            "  \\u005bgatehouse: connection ended (exited)]"
        );
        assert_eq!(child_line("plain [gatehouse"), "plain [gatehouse");
    }

    #[test]
    fn controls_are_escaped_json_compatibly() {
        let raw = "a\u{1b}]52;c;aGk=\u{7}b\u{9b}2K\u{202e}gnp.exe\nnext\tcol";
        let shown = escape_controls(raw);
        assert_eq!(
            shown,
            "a\\u001b]52;c;aGk=\\u0007b\\u009b2K\\u202egnp.exe\nnext\tcol"
        );
        let json = serde_json::json!({"label": "x\u{202e}y\u{9b}"}).to_string();
        let escaped = escape_controls(&json);
        let back: serde_json::Value = serde_json::from_str(&escaped).unwrap();
        assert_eq!(back["label"], "x\u{202e}y\u{9b}");
        assert!(matches!(
            escape_controls("plain"),
            std::borrow::Cow::Borrowed(_)
        ));
    }

    #[test]
    fn html_is_shown_as_text() {
        assert_eq!(
            escape_html("<a href=\"x\">R&D's</a>"),
            "&lt;a href=&quot;x&quot;&gt;R&amp;D&#39;s&lt;/a&gt;"
        );
        assert_eq!(
            escape_markup("Publish '<b>R&D</b>'?"),
            "Publish '&lt;b&gt;R&amp;D&lt;/b&gt;'?"
        );
    }

    #[test]
    fn bidi_controls_and_invisible_characters_are_found() {
        assert!(check_no_disguise("label", "ok label", Code::LABEL_INVALID, "h").is_ok());
        for c in [
            '\u{202e}', '\u{2067}', '\u{200f}', '\u{061c}', '\u{200b}', '\u{00ad}', '\u{feff}',
        ] {
            let e = check_no_disguise("label", &format!("a{c}b"), Code::LABEL_INVALID, "h")
                .unwrap_err();
            assert!(e.message.contains("U+"), "{}", e.message);
        }
    }
}

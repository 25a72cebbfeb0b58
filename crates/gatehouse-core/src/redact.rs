//! Redaction of secrets that may hide inside text we log (database URLs with
//! passwords, raw API keys).

/// Replaces the password of every `scheme://user:password@host` URL in `text`
/// with `***`, and every raw Gatehouse key with its public prefix.
///
/// # Caveats
/// This is a lenient scan on purpose, not `url::Url::parse`: URLs inside error
/// text are often the malformed ones (a bad port, a cut-off host), and a strict
/// parser that refuses them would leave their passwords in the log.
pub fn redact_urls(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    let mut rest = text;
    while let Some(pos) = rest.find("://") {
        let (before, after) = rest.split_at(pos + 3);
        out.push_str(before);
        let end = after
            .find(|c: char| c.is_whitespace() || c == '"' || c == '\'')
            .unwrap_or(after.len());
        let authority_end = after[..end].find('/').unwrap_or(end);
        let authority = &after[..authority_end];
        match (authority.rfind('@'), authority.find(':')) {
            (Some(at), Some(colon)) if colon < at => {
                out.push_str(&authority[..colon]);
                out.push_str(":***");
                out.push_str(&authority[at..]);
            }
            _ => out.push_str(authority),
        }
        rest = &after[authority_end..];
    }
    out.push_str(rest);
    // A URL's query may carry a password too (`?password=`, which sqlx reads).
    redact_named(&redact_keys(&out))
}

/// A database URL as it may be shown: a PostgreSQL URL parsed as its driver
/// parses it, its password masked wherever it is given (`user:password@`, a
/// `password` query parameter, however escaped), or only its scheme when it
/// does not parse; anything else through [`redact_urls`]. The scan of
/// [`redact_urls`] ends a URL at a space, a quote or the first `/`, which a
/// password the driver accepts may hold: such a password had been shown in
/// every error naming the database, to API clients included.
pub fn database_url(url: &str) -> String {
    let lower = url.trim_start().to_ascii_lowercase();
    if !(lower.starts_with("postgres://") || lower.starts_with("postgresql://")) {
        return redact_urls(url);
    }
    let Ok(mut parsed) = url::Url::parse(url.trim()) else {
        return format!(
            "{}://… (a URL that does not parse)",
            &lower[..lower.find("://").unwrap_or(0)]
        );
    };
    replace_url_password(&mut parsed, Some("***"));
    parsed.to_string()
}

/// Replaces a parsed URL's password with `with`, or removes it (`None`),
/// wherever the PostgreSQL driver reads one: its `user:password@` part and
/// its `password` query parameters (any letter case, however escaped);
/// whether it had one.
pub fn replace_url_password(url: &mut url::Url, with: Option<&str>) -> bool {
    let is_password = |k: &str| k.eq_ignore_ascii_case("password");
    let in_user = url.password().is_some();
    if in_user {
        // Only fails for URLs that cannot have a user part (no host).
        let _ = url.set_password(with);
    }
    let in_query = url.query_pairs().any(|(k, _)| is_password(&k));
    if in_query {
        let pairs: Vec<(String, String)> = url
            .query_pairs()
            .filter_map(|(k, v)| match (is_password(&k), with) {
                (false, _) => Some((k.into_owned(), v.into_owned())),
                (true, Some(mask)) => Some((k.into_owned(), mask.to_string())),
                (true, None) => None,
            })
            .collect();
        url.set_query(None);
        if !pairs.is_empty() {
            url.query_pairs_mut().extend_pairs(pairs);
        }
    }
    in_user || in_query
}

/// Replaces the secret part of anything shaped like a raw key, and the whole
/// of anything shaped like an OAuth token, code or client secret this server
/// hands out (those have no public part).
pub fn redact_keys(text: &str) -> String {
    const HEAD: &str = "gatehouse_";
    let mut out = String::with_capacity(text.len());
    let mut at = 0;
    while let Some(found) = text[at..].find(HEAD) {
        let start = at + found;
        let prefix_end = start + HEAD.len() + 3;
        let run = |from: usize, more: &[char]| {
            text[from..]
                .find(|c: char| !(c.is_ascii_alphanumeric() || more.contains(&c)))
                .map_or(text.len(), |n| from + n)
        };
        match text.as_bytes().get(start + HEAD.len()..prefix_end) {
            // A key: `gatehouse_sk_<id>_<secret>`, whose id is public.
            Some(b"sk_") => {
                let id_end = run(prefix_end, &[]);
                out.push_str(&text[at..id_end]);
                at = id_end;
                if text[id_end..].starts_with('_') {
                    out.push_str("_<redacted>");
                    at = run(id_end + 1, &[]);
                }
            }
            // An OAuth token, code or client secret (`at`, `rt`, `ac`,
            // `cs`): no public part.
            Some([a, b, b'_']) if a.is_ascii_lowercase() && b.is_ascii_lowercase() => {
                out.push_str(&text[at..prefix_end]);
                out.push_str(REDACTED);
                at = run(prefix_end, &['_', '-']);
            }
            _ => {
                out.push_str(&text[at..start + 1]);
                at = start + 1;
            }
        }
    }
    out.push_str(&text[at..]);
    out
}

/// Credentials shaped as what they are, whoever's they are: a URL's
/// password, a Gatehouse key's secret or token, a bearer token, the value
/// of a field named as a credential (`access_token=…`, `"password": "…"`,
/// `GITHUB_TOKEN=…`, `X-Api-Key: …`, `Authorization: Basic …`). For text a
/// child writes to its stderr, kept and shown to the admin: the connection's
/// declared secrets were redacted there, and a token it held otherwise (a
/// `redis://:password@…`, an `Authorization: Bearer …` it logged) was kept.
pub fn redact_credentials(text: &str) -> String {
    let text = if text.contains("://") || text.contains("gatehouse_") {
        redact_urls(text)
    } else {
        text.to_string()
    };
    redact_named(&redact_bearer(&text))
}

/// Whether a field of this name holds a credential: named as one
/// (`password`, `api_key`, `client_secret`) or ending as one does
/// (`GITHUB_TOKEN`, `db.password`, `x-api-key`); `key` and `sig` alone
/// only as a URL's query parameters (`?key=`, `&sig=`), where they are one.
fn names_a_credential(name: &str, in_query: bool) -> bool {
    const ENDINGS: &[&str] = &[
        "token",
        "secret",
        "password",
        "passwd",
        "api_key",
        "apikey",
        "api-key",
        "access_key",
        "private_key",
        "credential",
        "credentials",
        "signature",
        "authorization",
    ];
    let name = name.to_ascii_lowercase();
    ENDINGS.iter().any(|e| {
        name.strip_suffix(e)
            .is_some_and(|head| head.is_empty() || head.ends_with(['_', '-', '.']) || e.len() > 5)
    }) || (in_query && matches!(name.as_str(), "key" | "sig" | "code"))
}

/// The values of fields named as credentials ([`names_a_credential`]), as
/// `name=value`, `name: value` and `"name": "value"` write them, replaced.
/// A value after `:` that is not quoted must be 8 characters or more and not
/// one word of letters of one case (a line of prose, "password: incorrect",
/// keeps its word); after `=` any.
/// An `Authorization` value keeps its scheme word (`Basic <redacted>`).
fn redact_named(text: &str) -> String {
    if !text.contains(['=', ':']) {
        return text.to_string();
    }
    let bytes = text.as_bytes();
    let is_name = |b: u8| b.is_ascii_alphanumeric() || matches!(b, b'_' | b'-' | b'.');
    let mut out = String::with_capacity(text.len());
    let mut copied = 0;
    let mut i = 0;
    while i < bytes.len() {
        let sep = bytes[i];
        if sep != b'=' && sep != b':' {
            i += 1;
            continue;
        }
        // The name before the separator: `name`, `"name"` or `name ` .
        let mut end = i;
        while end > copied && bytes[end - 1] == b' ' {
            end -= 1;
        }
        if end > copied && matches!(bytes[end - 1], b'"' | b'\'') {
            end -= 1;
        }
        let mut start = end;
        while start > copied && is_name(bytes[start - 1]) {
            start -= 1;
        }
        let in_query = start > 0 && matches!(bytes[start - 1], b'?' | b'&' | b';');
        if start == end || !names_a_credential(&text[start..end], in_query) {
            i += 1;
            continue;
        }
        // The value after it: quoted to its closing quote, else to a delimiter.
        let mut v = i + 1;
        while v < bytes.len() && bytes[v] == b' ' {
            v += 1;
        }
        let quote = bytes.get(v).copied().filter(|q| matches!(q, b'"' | b'\''));
        if quote.is_some() {
            v += 1;
        }
        if text[start..end].eq_ignore_ascii_case("authorization")
            || text[start..end]
                .to_ascii_lowercase()
                .ends_with("-authorization")
        {
            // `Basic xyz`: the scheme word stays.
            let word = text[v..]
                .find(' ')
                .filter(|w| *w > 0 && text[v..v + w].bytes().all(|b| b.is_ascii_alphabetic()));
            if let Some(w) = word {
                v += w + 1;
            }
        }
        let value_len = text[v..]
            .find(|c: char| match quote {
                Some(q) => c == q as char,
                None => c.is_whitespace() || "&,;\"'<>)}]".contains(c),
            })
            .unwrap_or(text.len() - v);
        let value = &text[v..v + value_len];
        // After an unquoted `:`, a word of prose is no value.
        let token_like = value.len() >= 8
            && !(value.bytes().all(|b| b.is_ascii_lowercase())
                || value.bytes().all(|b| b.is_ascii_uppercase()));
        // Already masked (`<redacted>`, `<API key, not shown>`, `***`).
        let masked = (value.starts_with('<') && value.ends_with('>')) || value == "***";
        if value.is_empty() || masked || !(quote.is_some() || sep == b'=' || token_like) {
            i += 1;
            continue;
        }
        out.push_str(&text[copied..v]);
        out.push_str(REDACTED);
        copied = v + value_len;
        i = copied;
    }
    out.push_str(&text[copied..]);
    out
}

/// `Bearer <token>` with the token (8 characters or more) replaced, any
/// letter case of `Bearer`.
fn redact_bearer(text: &str) -> String {
    const WORD: &str = "bearer ";
    let lower = text.to_ascii_lowercase();
    if !lower.contains(WORD) {
        return text.to_string();
    }
    let mut out = String::with_capacity(text.len());
    let mut at = 0;
    while let Some(found) = lower[at..].find(WORD) {
        let start = at + found + WORD.len();
        out.push_str(&text[at..start]);
        let token_len = text[start..]
            .find(|c: char| !(c.is_ascii_alphanumeric() || "-._~+/=".contains(c)))
            .unwrap_or(text.len() - start);
        // A word of prose ("a bearer of news") is no token.
        if token_len >= 8 {
            out.push_str(REDACTED);
            at = start + token_len;
        } else {
            at = start;
        }
    }
    out.push_str(&text[at..]);
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Credentials of any kind in a child's stderr are redacted as what
    /// they are, not only the connection's declared secrets.
    #[test]
    fn credentials_are_redacted_whoever_they_belong_to() {
        let text = "to https://admin:hunter2pass@example.com/x and redis://:onlypass123@db:6379 \
                    with Authorization: Bearer ghp_abcDEF123 and bearer eyJ.a-b_c; key gatehouse_sk_abc123_SECRETSECRET9.";
        let out = redact_credentials(text);
        for leaked in [
            "hunter2pass",
            "onlypass123",
            "ghp_abcDEF123",
            "eyJ.a-b_c",
            "SECRETSECRET9",
        ] {
            assert!(!out.contains(leaked), "{leaked} in {out}");
        }
        assert!(out.contains("https://admin:***@example.com/x"), "{out}");
        assert!(
            out.contains("Bearer <redacted> and bearer <redacted>;"),
            "{out}"
        );
        assert_eq!(redact_credentials("a bearer of news"), "a bearer of news");
    }

    /// Credentials in fields named as such, in the shapes logs write them.
    #[test]
    fn values_of_fields_named_as_credentials_are_redacted() {
        for (text, leaked) in [
            ("GET /cb?code=abc123xyz&state=s1 200", "abc123xyz"),
            (
                "fetch https://api.example/x?access_token=tok_9f8e7d&page=2",
                "tok_9f8e7d",
            ),
            ("https://maps.example/api?key=AIzaSyA1b2c3", "AIzaSyA1b2c3"),
            (
                "env GITHUB_TOKEN=ghs_16C7e42F292c6912E7710c8 set",
                "ghs_16C7e42F292c6912E7710c8",
            ),
            (r#"{"user":"a","password":"pa ss word"}"#, "pa ss word"),
            (r#"config {'client_secret': 'cs-123'}"#, "cs-123"),
            ("X-Api-Key: 0123456789abcdef", "0123456789abcdef"),
            (
                "Authorization: Basic dXNlcjpwYXNzd29yZA==",
                "dXNlcjpwYXNzd29yZA==",
            ),
            ("db.password = hunter2", "hunter2"),
            ("refresh with gatehouse_rt_Zx81_-aB9 now", "Zx81_-aB9"),
            (
                "aws_secret_access_key=wJalrXUtnFEMI/K7MDENG",
                "wJalrXUtnFEMI/K7MDENG",
            ),
        ] {
            let out = redact_credentials(text);
            assert!(!out.contains(leaked), "{leaked} in {out}");
            assert!(out.contains(REDACTED), "{out}");
        }
        assert!(redact_credentials("Authorization: Basic dXNlcjpw").contains("Basic <redacted>"));
        // What names no credential, or is prose, stays.
        for kept in [
            "password: incorrect",
            "time 12:30:05 key=content_read tokens: 5",
            "see https://example.org/a?page=2&sort=asc",
            "monkey=banana",
        ] {
            assert_eq!(redact_credentials(kept), kept);
        }
    }

    /// A password the driver accepts may hold a space, a quote or a `/`, or
    /// name its parameter escaped (`pass%77ord`): each had been shown.
    #[test]
    fn a_database_urls_password_is_masked_whatever_it_holds() {
        for (url, secret) in [
            ("postgres://u:pa ss\"SECRET9@127.0.0.1:5/db", "SECRET9"),
            ("postgres://u:pa/ss-SECRET8@127.0.0.1:5/db", "SECRET8"),
            (
                "postgres://u@127.0.0.1:5/db?user=a&pass%77ord=Zsecret2",
                "Zsecret2",
            ),
            ("postgresql://u@h/db?PASSWORD=Zsecret3", "Zsecret3"),
            ("postgres://u:hunter2@h:99999/db", "hunter2"),
        ] {
            let shown = database_url(url);
            assert!(!shown.contains(secret), "{url} -> {shown}");
        }
        assert_eq!(
            database_url("postgres://app@db:5432/site?sslmode=require"),
            "postgres://app@db:5432/site?sslmode=require"
        );
        assert_eq!(
            database_url("sqlite:///tmp/a b/x.db"),
            "sqlite:///tmp/a b/x.db"
        );
    }

    /// sqlx reads a password from the query string too; an unreachable
    /// database's error had shown it.
    #[test]
    fn a_password_in_a_urls_query_is_hidden() {
        let shown = redact_urls(
            "cannot reach postgres://u:pw@127.0.0.1:1/db?password=Q2xyz&sslmode=require",
        );
        assert!(
            !shown.contains("Q2xyz") && !shown.contains(":pw@"),
            "{shown}"
        );
        assert!(shown.contains("sslmode=require"), "{shown}");
    }

    #[test]
    fn url_password_is_hidden() {
        let s = redact_urls("connect postgres://app:hunter2@db.local:5432/site failed");
        assert_eq!(s, "connect postgres://app:***@db.local:5432/site failed");
    }

    /// `url::Url::parse` refuses this URL (port out of range); the scan must not.
    #[test]
    fn password_of_a_malformed_url_is_hidden() {
        let s = redact_urls("invalid port in postgres://app:hunter2@db:99999/site; giving up");
        assert_eq!(
            s,
            "invalid port in postgres://app:***@db:99999/site; giving up"
        );
        assert!(url::Url::parse("postgres://app:hunter2@db:99999/site").is_err());
    }

    #[test]
    fn url_without_password_is_kept() {
        assert_eq!(redact_urls("sqlite:///tmp/x.db"), "sqlite:///tmp/x.db");
        assert_eq!(redact_urls("postgres://app@h/db"), "postgres://app@h/db");
    }

    #[test]
    fn raw_key_secret_is_hidden() {
        let s = redact_keys("key gatehouse_sk_abc123_SECRETSECRET9 end");
        assert_eq!(s, "key gatehouse_sk_abc123_<redacted> end");
    }
}

/// What a redacted secret is replaced by.
pub const REDACTED: &str = "<redacted>";

/// Values shorter than this are redacted only as they are: the hex and
/// base64 forms of a very short value are short enough to occur by chance.
const MIN_ENCODED_SECRET: usize = 8;

/// A connection's secret values, with the forms a server may print them in:
/// as they are, hex, and base64 (standard and URL-safe, at each of the three
/// alignments a value can have inside a longer encoded text), each matched
/// without regard to ASCII letter case. Redacted from everything the server
/// says: its stderr and its tool results.
#[derive(Debug, Clone, Default)]
pub struct Secrets {
    /// Every form, longest first.
    forms: Vec<String>,
    /// A searcher per form, lowercased: built once, used for every line.
    lowered: Vec<memchr::memmem::Finder<'static>>,
}

impl Secrets {
    pub fn new(values: impl IntoIterator<Item = String>) -> Secrets {
        use base64::Engine as _;
        let mut forms = Vec::new();
        for value in values.into_iter().filter(|v| !v.is_empty()) {
            if value.len() >= MIN_ENCODED_SECRET {
                forms.push(hex::encode(&value));
                for engine in [
                    base64::engine::general_purpose::STANDARD_NO_PAD,
                    base64::engine::general_purpose::URL_SAFE_NO_PAD,
                ] {
                    for skip in 0..3usize {
                        // The characters that depend on the value's bytes alone,
                        // when `skip` other bytes precede it.
                        let mut bytes = vec![0u8; skip];
                        bytes.extend_from_slice(value.as_bytes());
                        let encoded = engine.encode(&bytes);
                        let (start, end) = ((8 * skip).div_ceil(6), 8 * bytes.len() / 6);
                        forms.push(encoded[start..end].to_string());
                    }
                }
            }
            forms.push(value);
        }
        forms.sort_by(|a, b| b.len().cmp(&a.len()).then(a.cmp(b)));
        forms.dedup();
        let lowered = forms
            .iter()
            .map(|f| memchr::memmem::Finder::new(&f.to_ascii_lowercase()).into_owned())
            .collect();
        Secrets { forms, lowered }
    }

    pub fn is_empty(&self) -> bool {
        self.forms.is_empty()
    }

    /// Every form, longest first (for finding pieces of one at a cut).
    pub fn forms(&self) -> &[String] {
        &self.forms
    }

    /// `text` with every form of every secret replaced by [`REDACTED`].
    pub fn redact(&self, text: String) -> String {
        if self.forms.is_empty() {
            return text;
        }
        // ASCII lowercasing keeps every byte where it was, and a match of a
        // form (valid UTF-8) starts and ends on character boundaries.
        let lower = text.to_ascii_lowercase();
        let mut found: Vec<(usize, usize)> = Vec::new();
        for finder in &self.lowered {
            let len = finder.needle().len();
            found.extend(finder.find_iter(lower.as_bytes()).map(|at| (at, at + len)));
        }
        if found.is_empty() {
            return text;
        }
        found.sort_unstable();
        let mut out = String::with_capacity(text.len());
        let mut at = 0;
        for (start, end) in found {
            if end <= at {
                continue;
            }
            if start >= at {
                out.push_str(&text[at..start]);
                out.push_str(REDACTED);
            }
            at = end;
        }
        out.push_str(&text[at..]);
        out
    }

    /// Every string in `value` (keys included) through [`Secrets::redact`].
    pub fn redact_json(&self, value: &mut serde_json::Value) {
        use serde_json::Value;
        if self.forms.is_empty() {
            return;
        }
        match value {
            Value::String(s) => *s = self.redact(std::mem::take(s)),
            Value::Array(items) => items.iter_mut().for_each(|v| self.redact_json(v)),
            Value::Object(map) => {
                let entries = std::mem::take(map);
                for (k, mut v) in entries {
                    self.redact_json(&mut v);
                    map.insert(self.redact(k), v);
                }
            }
            _ => {}
        }
    }
}

#[cfg(test)]
mod secrets_tests {
    use super::*;
    use base64::Engine as _;

    const SECRET: &str = "s3cr3t-Value/42+x";

    #[test]
    fn every_form_of_a_secret_is_redacted() {
        let secrets = Secrets::new([SECRET.to_string()]);
        let b64 = base64::engine::general_purpose::STANDARD;
        let url = base64::engine::general_purpose::URL_SAFE;
        let forms = [
            SECRET.to_string(),
            SECRET.to_uppercase(),
            SECRET.to_lowercase(),
            hex::encode(SECRET),
            hex::encode_upper(SECRET),
            b64.encode(SECRET),
            url.encode(SECRET),
            // Inside longer encoded text, at each alignment.
            b64.encode(format!("token={SECRET}; more")),
            b64.encode(format!("t={SECRET}")),
            b64.encode(format!("ab{SECRET}cd")),
            url.encode(format!("x{SECRET}")),
            // Authorization: Basic, the usual way a secret reaches a log.
            b64.encode(format!("user:{SECRET}")),
        ];
        for form in forms {
            let text = secrets.redact(format!("before {form} after"));
            assert!(text.contains(REDACTED), "{form}: {text}");
            assert!(
                !text.to_lowercase().contains(&SECRET.to_lowercase()),
                "{text}"
            );
            assert!(!text.contains(&hex::encode(SECRET)), "{text}");
            assert!(
                text.starts_with("before ") && text.ends_with(" after"),
                "{text}"
            );
        }
        assert_eq!(secrets.redact("nothing here".into()), "nothing here");
    }

    #[test]
    fn short_secrets_are_redacted_only_as_they_are() {
        let secrets = Secrets::new(["abc".to_string(), String::new()]);
        assert_eq!(secrets.forms(), ["abc"]);
        assert_eq!(secrets.redact("xABCx YWJj".into()), "x<redacted>x YWJj");
    }

    #[test]
    fn overlapping_forms_become_one_redaction() {
        let secrets = Secrets::new(["abcdefgh".to_string(), "efghijkl".to_string()]);
        assert_eq!(secrets.redact("1abcdefghijkl2".into()), "1<redacted>2");
    }

    #[test]
    fn strings_and_keys_in_json_are_redacted() {
        let secrets = Secrets::new([SECRET.to_string()]);
        let mut v = serde_json::json!({
            "content": [{"type": "text", "text": format!("env: {SECRET}")}],
            SECRET: [1, hex::encode(SECRET)],
        });
        secrets.redact_json(&mut v);
        let text = v.to_string();
        assert!(
            !text.contains(SECRET) && !text.contains(&hex::encode(SECRET)),
            "{text}"
        );
        assert_eq!(v["content"][0]["text"], "env: <redacted>");
    }
}

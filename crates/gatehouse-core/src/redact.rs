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
    redact_keys(&out)
}

/// Replaces the secret part of anything shaped like a raw key.
pub fn redact_keys(text: &str) -> String {
    const PREFIX: &str = "gatehouse_sk_";
    let mut out = String::with_capacity(text.len());
    let mut rest = text;
    while let Some(pos) = rest.find(PREFIX) {
        out.push_str(&rest[..pos + PREFIX.len()]);
        let tail = &rest[pos + PREFIX.len()..];
        let id_end = tail
            .find(|c: char| !c.is_ascii_alphanumeric())
            .unwrap_or(tail.len());
        out.push_str(&tail[..id_end]);
        let after_id = &tail[id_end..];
        if let Some(secret) = after_id.strip_prefix('_') {
            let secret_end = secret
                .find(|c: char| !c.is_ascii_alphanumeric())
                .unwrap_or(secret.len());
            out.push_str("_<redacted>");
            rest = &secret[secret_end..];
        } else {
            rest = after_id;
        }
    }
    out.push_str(rest);
    out
}

#[cfg(test)]
mod tests {
    use super::*;

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

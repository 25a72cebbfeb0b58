//! A key's text: `gatehouse_sk_<key id>_<secret><checksum>`.

use rand::RngExt;
use rand::distr::Alphanumeric;
use rand::rand_core::UnwrapErr;
use rand::rngs::SysRng;

pub const PREFIX: &str = "gatehouse_sk_";
pub const ID_LEN: usize = 12;
pub const SECRET_LEN: usize = 33;
pub const CHECKSUM_LEN: usize = 6;
const BASE62: &[u8; 62] = b"0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz";

/// A raw API key. It never prints: there is no `Display`, and `Debug` shows
/// `RawKey(<redacted>)`; `expose` is the one way to the text.
#[derive(Clone, PartialEq, Eq)]
pub struct RawKey(String);

impl RawKey {
    pub fn new(raw: impl Into<String>) -> RawKey {
        RawKey(raw.into())
    }
    /// The raw text, for the one place that must show it (mint output).
    pub fn expose(&self) -> &str {
        &self.0
    }
}

impl std::fmt::Debug for RawKey {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("RawKey(<redacted>)")
    }
}

/// A key split into its parts after the format and checksum were checked.
#[derive(Debug, PartialEq, Eq)]
pub struct ParsedKey<'a> {
    pub id: &'a str,
    pub(super) secret: &'a str,
}

/// Why a key string was refused before the store was consulted.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Malformed {
    Prefix,
    Shape,
    Checksum,
}

fn base62_fixed(mut n: u64, width: usize) -> String {
    let mut out = vec![b'0'; width];
    for slot in out.iter_mut().rev() {
        *slot = BASE62[(n % 62) as usize];
        n /= 62;
    }
    String::from_utf8(out).expect("base62 is ASCII")
}

/// The checksum of the text before it.
pub fn checksum(body: &str) -> String {
    base62_fixed(u64::from(crc32fast::hash(body.as_bytes())), CHECKSUM_LEN)
}

/// Whether `id` has a key id's shape: [`ID_LEN`] ASCII letters or digits.
pub fn is_key_id(id: &str) -> bool {
    id.len() == ID_LEN && id.bytes().all(|b| b.is_ascii_alphanumeric())
}

/// Checks format and checksum. Never panics, whatever the input.
pub fn parse(raw: &str) -> std::result::Result<ParsedKey<'_>, Malformed> {
    let rest = raw.strip_prefix(PREFIX).ok_or(Malformed::Prefix)?;
    let alnum = |s: &str| s.bytes().all(|b| b.is_ascii_alphanumeric());
    if rest.len() != ID_LEN + 1 + SECRET_LEN + CHECKSUM_LEN || !rest.is_char_boundary(ID_LEN) {
        return Err(Malformed::Shape);
    }
    let (id, tail) = rest.split_at(ID_LEN);
    let tail = tail.strip_prefix('_').ok_or(Malformed::Shape)?;
    if !is_key_id(id) || !alnum(tail) {
        return Err(Malformed::Shape);
    }
    let (secret, sum) = tail.split_at(SECRET_LEN);
    let body = &raw[..raw.len() - CHECKSUM_LEN];
    if checksum(body) != sum {
        return Err(Malformed::Checksum);
    }
    Ok(ParsedKey { id, secret })
}

fn random_base62(len: usize) -> String {
    // Alphanumeric samples the 62 characters uniformly (rejection sampling).
    // SysRng is the OS CSPRNG; a failing OS RNG is a panic, as OsRng's was.
    UnwrapErr(SysRng)
        .sample_iter(Alphanumeric)
        .take(len)
        .map(char::from)
        .collect()
}

/// Generates a fresh raw key and returns it with its id.
pub fn generate() -> (String, RawKey) {
    let id = random_base62(ID_LEN);
    let body = format!("{PREFIX}{id}_{}", random_base62(SECRET_LEN));
    let raw = format!("{body}{}", checksum(&body));
    (id, RawKey(raw))
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn generated_keys_round_trip() {
        let (id, key) = generate();
        let parsed = parse(key.expose()).unwrap();
        assert_eq!(parsed.id, id);
        assert_eq!(
            key.expose().len(),
            PREFIX.len() + ID_LEN + 1 + SECRET_LEN + CHECKSUM_LEN
        );
        assert!(key.expose().starts_with("gatehouse_sk_"));
    }

    #[test]
    fn debug_never_shows_the_key() {
        let (_, key) = generate();
        assert_eq!(format!("{key:?}"), "RawKey(<redacted>)");
    }

    #[test]
    fn checksum_is_checked() {
        let (_, key) = generate();
        let mut s = key.expose().to_string();
        let last = s.pop().unwrap();
        s.push(if last == 'A' { 'B' } else { 'A' });
        assert_eq!(parse(&s), Err(Malformed::Checksum));
        assert_eq!(parse("gatehouse_sk_"), Err(Malformed::Shape));
        assert_eq!(parse("sk_live_123"), Err(Malformed::Prefix));
    }

    #[test]
    fn two_keys_differ() {
        assert_ne!(generate().1, generate().1);
    }

    proptest! {
        #[test]
        fn parser_never_panics(s in "\\PC*") {
            let _ = parse(&s);
        }

        #[test]
        fn parser_never_panics_on_near_keys(tail in "[A-Za-z0-9_]{0,60}") {
            let _ = parse(&format!("{PREFIX}{tail}"));
        }

        #[test]
        fn every_single_character_change_is_refused(pos in 0usize..(PREFIX.len() + ID_LEN + 1 + SECRET_LEN + CHECKSUM_LEN), c in proptest::char::any()) {
            let (_, key) = generate();
            let original = key.expose();
            let mut chars: Vec<char> = original.chars().collect();
            prop_assume!(chars[pos] != c);
            chars[pos] = c;
            let changed: String = chars.into_iter().collect();
            prop_assert!(parse(&changed).is_err(), "accepted {changed:?}");
        }
    }
}

//! A key's restrictions: what it may do is its roles' reach, narrowed further
//! by a tool allowlist, read-only, a content scope and a call rate. A
//! restriction never widens anything: the permission table still decides
//! first, and each restriction can only take away.
//!
//! The restrictions are stored with the key (one JSON column, so the per-call
//! recheck that reads the key reads them too) and travel in
//! [`crate::access::actor::Actor::ApiKey`]. Which tool is "read" is the
//! manifest's business (`mcp::server::reach` applies the tool and read-only
//! parts); the content scope is applied by `site::content` for every caller,
//! inside the SQL of lists and searches so that nothing outside it is ever
//! counted.

use std::fmt;
use std::str::FromStr;

use serde::{Deserialize, Serialize};

use crate::access::oauth::ScopeSet;
use crate::error::{Code, Error, Result};

/// A key's restrictions; the default restricts nothing.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize, ts_rs::TS)]
pub struct Restrictions {
    /// The only tools the key may call (still subject to its roles).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[ts(optional)]
    pub tools: Option<Vec<String>>,
    /// Only tools whose effect class is read.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub read_only: bool,
    /// The entries the key may see and touch.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[ts(optional)]
    pub content: Option<ContentScope>,
    /// At most this many tool calls per period.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[ts(optional)]
    pub rate: Option<Rate>,
    /// Tools (by name) or effect classes whose calls wait for a person's yes
    /// (`access::approvals`), on top of the site's approval policy.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[ts(optional)]
    pub approve: Option<Vec<String>>,
    /// The client networks `gatehouse serve` accepts the key from (the
    /// trusted proxy's forwarded address behind one). stdio is local: it is
    /// never refused by this.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[ts(optional, type = "Array<string>")]
    pub from: Option<Vec<Network>>,
    /// The OAuth scopes a token narrows its key's actor to. Never part of
    /// the key's stored restrictions: the grant holds them, and the token
    /// check puts them here (see `access::oauth`).
    #[serde(skip)]
    #[ts(skip)]
    pub scopes: Option<ScopeSet>,
    /// The OAuth grant a token's actor acts through, so each call's audit
    /// entry names it (per-grant usage is counted from those). Like
    /// `scopes`, set by the token check only, never stored with a key.
    #[serde(skip)]
    #[ts(skip)]
    pub grant: Option<String>,
}

impl Restrictions {
    /// Whether nothing is restricted.
    pub fn is_empty(&self) -> bool {
        *self == Restrictions::default()
    }

    /// The stored form: `None` when nothing is restricted.
    pub fn to_stored(&self) -> Option<String> {
        (!self.is_empty()).then(|| serde_json::to_string(self).expect("restrictions serialise"))
    }

    /// Carries a token's scopes and grant over from `token` (what the token
    /// check set) onto restrictions just re-read from the store.
    pub fn keep_token(mut self, token: Option<&Restrictions>) -> Restrictions {
        self.scopes = token.and_then(|t| t.scopes.clone());
        self.grant = token.and_then(|t| t.grant.clone());
        self
    }

    /// Refuses a call from `client` when the key is restricted to other
    /// networks (`keys restrict --from`).
    pub fn check_network(&self, client: std::net::IpAddr) -> Result<()> {
        let Some(nets) = &self.from else {
            return Ok(());
        };
        if nets.iter().any(|n| n.contains(client)) {
            return Ok(());
        }
        let shown: Vec<String> = nets.iter().map(ToString::to_string).collect();
        Err(Error::new(
            Code::KEY_NETWORK_NOT_ALLOWED,
            format!("this key is not accepted from {client}"),
        )
        .hint(format!(
            "the key is restricted to {}; an admin can change it with `gatehouse keys restrict ID --from …`",
            shown.join(", ")
        )))
    }

    /// Reads the stored form; a row that does not parse is an error, never
    /// "no restrictions" (that would widen the key).
    pub fn from_stored(text: Option<&str>) -> Result<Restrictions> {
        match text {
            None => Ok(Restrictions::default()),
            Some(t) => serde_json::from_str(t).map_err(|e| {
                tracing::error!(error = %e, "a key's stored restrictions do not parse");
                Error::new(
                    Code::STORAGE_ERROR,
                    "a key's stored restrictions cannot be read",
                )
                .hint("set them again with `gatehouse keys restrict ID ...`")
            }),
        }
    }
}

/// Which entries a key may see and touch: slugs matching one of `slugs`
/// (every slug when empty) with a status in `status`.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize, ts_rs::TS)]
pub struct ContentScope {
    #[serde(default)]
    pub slugs: Vec<SlugPattern>,
    #[serde(default)]
    pub status: StatusScope,
}

/// Drafts, published entries, or both.
#[derive(
    Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize, ts_rs::TS, strum::Display,
)]
#[serde(rename_all = "lowercase")]
#[strum(serialize_all = "lowercase")]
pub enum StatusScope {
    #[default]
    Any,
    Draft,
    Published,
}

impl FromStr for StatusScope {
    type Err = Error;
    fn from_str(s: &str) -> Result<Self> {
        match s.trim() {
            "any" | "all" => Ok(StatusScope::Any),
            "draft" | "drafts" => Ok(StatusScope::Draft),
            "published" => Ok(StatusScope::Published),
            other => Err(Error::invalid(
                Code::KEY_RESTRICTION_INVALID,
                format!("unknown content status {other:?}"),
                "use draft, published or any",
            )),
        }
    }
}

impl StatusScope {
    /// Whether an entry with `status` (`draft` or `published`) is in scope.
    pub fn admits(self, status: &str) -> bool {
        match self {
            StatusScope::Any => true,
            StatusScope::Draft => status == "draft",
            StatusScope::Published => status == "published",
        }
    }
}

/// A client network in CIDR form (`10.0.0.0/8`, `2001:db8::/32`); a bare
/// address is its own /32 or /128. An IPv4-mapped one (`::ffff:10.0.0.0/104`)
/// is kept as its IPv4 network: clients are matched by their IPv4 address,
/// so in the mapped form it would never match anyone. A wider IPv6 network
/// (`::/0`) matches IPv6 clients only.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, ts_rs::TS)]
#[serde(try_from = "String", into = "String")]
#[ts(type = "string")]
pub struct Network(ipnet::IpNet);

impl FromStr for Network {
    type Err = Error;
    fn from_str(s: &str) -> Result<Self> {
        let s = s.trim();
        s.parse::<ipnet::IpNet>()
            .or_else(|_| s.parse::<std::net::IpAddr>().map(ipnet::IpNet::from))
            .map(|n| Network(ipv4_if_mapped(n).trunc()))
            .map_err(|_| {
                Error::invalid(
                    Code::KEY_RESTRICTION_INVALID,
                    format!("{s:?} is not a network"),
                    "give networks in CIDR form, comma-separated, e.g. --from 10.0.0.0/8,192.168.1.0/24",
                )
            })
    }
}

impl TryFrom<String> for Network {
    type Error = Error;
    fn try_from(s: String) -> Result<Self> {
        s.parse()
    }
}

impl From<Network> for String {
    fn from(n: Network) -> String {
        n.0.to_string()
    }
}

impl fmt::Display for Network {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        self.0.fmt(f)
    }
}

impl Network {
    /// Whether `ip` is in this network (an IPv4-mapped IPv6 address counts as its IPv4 one).
    pub fn contains(&self, ip: std::net::IpAddr) -> bool {
        let ip = match ip {
            std::net::IpAddr::V6(v6) => v6.to_ipv4_mapped().map_or(ip, std::net::IpAddr::V4),
            v4 => v4,
        };
        self.0.contains(&ip)
    }
}

/// `net` as an IPv4 network if it lies wholly in `::ffff:0:0/96`.
fn ipv4_if_mapped(net: ipnet::IpNet) -> ipnet::IpNet {
    match net {
        ipnet::IpNet::V6(v6) if v6.prefix_len() >= 96 => v6
            .addr()
            .to_ipv4_mapped()
            .and_then(|v4| ipnet::Ipv4Net::new(v4, v6.prefix_len() - 96).ok())
            .map_or(net, ipnet::IpNet::V4),
        _ => net,
    }
}

/// Networks, comma-separated.
pub fn parse_networks(list: &str) -> Result<Vec<Network>> {
    let out: Vec<Network> = list
        .split(',')
        .filter(|s| !s.trim().is_empty())
        .map(str::parse)
        .collect::<Result<_>>()?;
    if out.is_empty() {
        return Err(Error::invalid(
            Code::KEY_RESTRICTION_INVALID,
            "no network named",
            "e.g. --from 10.0.0.0/8; to lift it use --clear from",
        ));
    }
    Ok(out)
}

/// A slug pattern: slug characters and `*` (any run of them, even none).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, ts_rs::TS)]
#[serde(try_from = "String", into = "String")]
#[ts(type = "string")]
pub struct SlugPattern(String);

impl TryFrom<String> for SlugPattern {
    type Error = Error;
    fn try_from(s: String) -> Result<Self> {
        s.parse()
    }
}

impl From<SlugPattern> for String {
    fn from(p: SlugPattern) -> String {
        p.0
    }
}

impl FromStr for SlugPattern {
    type Err = Error;
    fn from_str(s: &str) -> Result<Self> {
        let s = s.trim();
        let ok_chars = s
            .bytes()
            .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'-' || b == b'*');
        if s.is_empty() || s.len() > 100 || !ok_chars {
            let hint = if s.contains('/') {
                // Slugs are flat: `blog/*` can never match one.
                format!(
                    "slugs have no '/': name the entries by their slug prefix, e.g. {:?}",
                    s.replace('/', "-")
                )
            } else {
                "use lowercase letters, digits, dashes and * (any run of characters), e.g. blog-*"
                    .to_string()
            };
            return Err(Error::invalid(
                Code::KEY_RESTRICTION_INVALID,
                format!("{s:?} is not a slug pattern"),
                hint,
            ));
        }
        Ok(SlugPattern(s.to_string()))
    }
}

impl fmt::Display for SlugPattern {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

impl SlugPattern {
    pub fn as_str(&self) -> &str {
        &self.0
    }

    /// Whether `slug` matches (`*` is any run of characters).
    pub fn matches(&self, slug: &str) -> bool {
        glob(self.0.as_bytes(), slug.as_bytes())
    }

    /// The same pattern for SQL `LIKE`: the pattern's only wildcard is `*`
    /// and its other characters are never `%`, `_` or `\`, so nothing needs
    /// escaping; slugs are lowercase, so SQLite's case-blind `LIKE` agrees.
    pub fn to_like(&self) -> String {
        self.0.replace('*', "%")
    }
}

/// Glob matching with `*` only, iterative with one backtrack point.
fn glob(pattern: &[u8], text: &[u8]) -> bool {
    let (mut p, mut t) = (0, 0);
    let mut star: Option<(usize, usize)> = None;
    while t < text.len() {
        if p < pattern.len() && pattern[p] == b'*' {
            star = Some((p, t));
            p += 1;
        } else if p < pattern.len() && pattern[p] == text[t] {
            p += 1;
            t += 1;
        } else if let Some((sp, st)) = star {
            p = sp + 1;
            t = st + 1;
            star = Some((sp, st + 1));
        } else {
            return false;
        }
    }
    pattern[p..].iter().all(|&b| b == b'*')
}

impl ContentScope {
    /// Whether the slug is one the key may name (decided on the name alone).
    pub fn names(&self, slug: &str) -> bool {
        self.slugs.is_empty() || self.slugs.iter().any(|p| p.matches(slug))
    }

    /// Whether an entry is in scope.
    pub fn admits(&self, slug: &str, status: &str) -> bool {
        self.names(slug) && self.status.admits(status)
    }

    /// The refusal for a slug outside the patterns.
    pub fn refuse_slug(&self, slug: &str) -> Error {
        Error::new(
            Code::KEY_SCOPE_CONTENT,
            format!("{slug:?} is outside this key's content scope"),
        )
        .hint(format!(
            "this key may only touch {}; ask the site admin to widen it with `gatehouse keys restrict`",
            self.describe()
        ))
        .detail(serde_json::json!({"slug": slug, "scope": self}))
    }

    /// The refusal for an entry whose status is outside the scope.
    pub fn refuse_status(&self, slug: &str, why: &str) -> Error {
        Error::new(
            Code::KEY_SCOPE_CONTENT,
            format!("{slug:?}: {why} outside this key's content scope"),
        )
        .hint(format!("this key may only touch {}", self.describe()))
        .detail(serde_json::json!({"slug": slug, "scope": self}))
    }

    /// In words: "drafts with slugs matching blog-* or news-*".
    pub fn describe(&self) -> String {
        let what = match self.status {
            StatusScope::Any => "entries",
            StatusScope::Draft => "drafts",
            StatusScope::Published => "published entries",
        };
        if self.slugs.is_empty() {
            format!("{what} with any slug")
        } else {
            let list = self
                .slugs
                .iter()
                .map(SlugPattern::as_str)
                .collect::<Vec<_>>()
                .join(" or ");
            format!("{what} with slugs matching {list}")
        }
    }
}

/// A call rate: `calls` per `period`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, ts_rs::TS)]
#[serde(try_from = "String", into = "String")]
#[ts(type = "string")]
pub struct Rate {
    pub calls: u32,
    pub period: RatePeriod,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RatePeriod {
    Second,
    Minute,
    Hour,
    Day,
}

impl RatePeriod {
    pub fn millis(self) -> i64 {
        match self {
            RatePeriod::Second => 1_000,
            RatePeriod::Minute => 60_000,
            RatePeriod::Hour => 3_600_000,
            RatePeriod::Day => 86_400_000,
        }
    }

    fn short(self) -> &'static str {
        match self {
            RatePeriod::Second => "s",
            RatePeriod::Minute => "min",
            RatePeriod::Hour => "h",
            RatePeriod::Day => "d",
        }
    }

    fn word(self) -> &'static str {
        match self {
            RatePeriod::Second => "second",
            RatePeriod::Minute => "minute",
            RatePeriod::Hour => "hour",
            RatePeriod::Day => "day",
        }
    }
}

impl FromStr for Rate {
    type Err = Error;
    fn from_str(s: &str) -> Result<Self> {
        let bad = || {
            Error::invalid(
                Code::KEY_RESTRICTION_INVALID,
                format!("cannot read the rate {s:?}"),
                "write calls per period, e.g. 60/min, 5/s, 1000/h or 10000/d (1 to 1,000,000 calls)",
            )
        };
        let (n, per) = s.trim().split_once('/').ok_or_else(bad)?;
        let calls: u32 = n.trim().parse().map_err(|_| bad())?;
        if !(1..=1_000_000).contains(&calls) {
            return Err(bad());
        }
        let period = match per.trim() {
            "s" | "sec" | "second" => RatePeriod::Second,
            "m" | "min" | "minute" => RatePeriod::Minute,
            "h" | "hour" => RatePeriod::Hour,
            "d" | "day" => RatePeriod::Day,
            _ => return Err(bad()),
        };
        Ok(Rate { calls, period })
    }
}

impl TryFrom<String> for Rate {
    type Error = Error;
    fn try_from(s: String) -> Result<Self> {
        s.parse()
    }
}

impl From<Rate> for String {
    fn from(r: Rate) -> String {
        r.to_string()
    }
}

impl fmt::Display for Rate {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}/{}", self.calls, self.period.short())
    }
}

impl Rate {
    /// In words: "60 calls a minute".
    pub fn describe(&self) -> String {
        let calls = if self.calls == 1 { "call" } else { "calls" };
        format!("{} {calls} a {}", self.calls, self.period.word())
    }
}

/// Parses a comma-separated pattern list (`"blog-*,news-*"`), deduplicated.
pub fn parse_patterns(list: &str) -> Result<Vec<SlugPattern>> {
    let mut out: Vec<SlugPattern> = Vec::new();
    for p in list.split(',').filter(|s| !s.trim().is_empty()) {
        let p: SlugPattern = p.parse()?;
        if !out.contains(&p) {
            out.push(p);
        }
    }
    if out.is_empty() {
        return Err(Error::invalid(
            Code::KEY_RESTRICTION_INVALID,
            "no slug pattern given",
            "pass one or more patterns, comma-separated, e.g. --content 'blog-*,news-*'",
        ));
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn pat(s: &str) -> SlugPattern {
        s.parse().unwrap()
    }

    #[test]
    fn patterns_match_like_globs() {
        assert!(pat("blog-*").matches("blog-spring"));
        assert!(pat("blog-*").matches("blog-"));
        assert!(!pat("blog-*").matches("blog"));
        assert!(!pat("blog-*").matches("xblog-a"));
        assert!(pat("*-draft").matches("a-b-draft"));
        assert!(pat("a*b*c").matches("aXbYc".to_lowercase().as_str()));
        assert!(!pat("a*b*c").matches("acb"));
        assert!(pat("exact").matches("exact") && !pat("exact").matches("exactly"));
        assert!(pat("*").matches("anything"));
    }

    #[test]
    fn a_slash_pattern_is_refused_with_the_dash_form() {
        let e = "blog/*".parse::<SlugPattern>().unwrap_err();
        assert_eq!(e.code, Code::KEY_RESTRICTION_INVALID);
        assert!(e.hint.unwrap().contains("blog-*"));
        for bad in ["", "Blog-*", "blog_%", "a b", "x\\y"] {
            assert!(bad.parse::<SlugPattern>().is_err(), "{bad:?}");
        }
    }

    #[test]
    fn rates_parse_and_print() {
        let r: Rate = "60/min".parse().unwrap();
        assert_eq!((r.calls, r.period), (60, RatePeriod::Minute));
        assert_eq!(r.to_string(), "60/min");
        assert_eq!(r.describe(), "60 calls a minute");
        assert_eq!("1/s".parse::<Rate>().unwrap().describe(), "1 call a second");
        for bad in ["60", "0/min", "x/min", "60/week", "-1/s", "2000000/s"] {
            assert_eq!(
                bad.parse::<Rate>().unwrap_err().code,
                Code::KEY_RESTRICTION_INVALID,
                "{bad}"
            );
        }
    }

    #[test]
    fn networks_parse_contain_and_refuse_junk() {
        let n = parse_networks("10.0.0.0/8,192.0.2.7").unwrap();
        assert!(n[0].contains("10.1.2.3".parse().unwrap()));
        assert!(n[0].contains("::ffff:10.1.2.3".parse().unwrap()));
        assert!(!n[0].contains("11.0.0.1".parse().unwrap()));
        assert_eq!(n[1].to_string(), "192.0.2.7/32");
        assert_eq!(
            "10.9.9.9/8".parse::<Network>().unwrap().to_string(),
            "10.0.0.0/8"
        );
        for bad in ["10.0.0.0/33", "localhost", ""] {
            assert!(parse_networks(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn an_ipv4_mapped_network_matches_its_ipv4_clients() {
        let n: Network = "::ffff:127.0.0.0/104".parse().unwrap();
        assert_eq!(n.to_string(), "127.0.0.0/8");
        assert!(n.contains("127.0.0.1".parse().unwrap()));
        assert!(n.contains("::ffff:127.0.0.1".parse().unwrap()));
        assert!(!n.contains("10.0.0.1".parse().unwrap()));
        let one: Network = "::ffff:192.0.2.7".parse().unwrap();
        assert_eq!(one.to_string(), "192.0.2.7/32");
        // Wider than the mapped range: an IPv6 network, as written.
        let wide: Network = "::/64".parse().unwrap();
        assert_eq!(wide.to_string(), "::/64");
    }

    #[test]
    fn stored_form_round_trips_and_none_is_empty() {
        assert_eq!(Restrictions::default().to_stored(), None);
        let r = Restrictions {
            tools: Some(vec!["content_read".into()]),
            read_only: true,
            content: Some(ContentScope {
                slugs: vec![pat("blog-*")],
                status: StatusScope::Draft,
            }),
            rate: Some("5/s".parse().unwrap()),
            approve: Some(vec!["publish".into(), "media_write".into()]),
            from: Some(parse_networks("10.0.0.0/8, 2001:db8::/32,192.0.2.7").unwrap()),
            scopes: None,
            grant: None,
        };
        let text = r.to_stored().unwrap();
        assert_eq!(Restrictions::from_stored(Some(&text)).unwrap(), r);
        assert!(Restrictions::from_stored(Some("{\"content\":{\"slugs\":[\"a/b\"]}}")).is_err());
        assert!(Restrictions::from_stored(Some("not json")).is_err());
    }

    #[test]
    fn scope_in_words() {
        let s = ContentScope {
            slugs: vec![pat("blog-*"), pat("news-*")],
            status: StatusScope::Published,
        };
        assert_eq!(
            s.describe(),
            "published entries with slugs matching blog-* or news-*"
        );
        assert!(s.admits("blog-a", "published") && !s.admits("blog-a", "draft"));
        assert!(!s.admits("about", "published"));
    }
}

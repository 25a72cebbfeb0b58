//! `http_fetch`: GET a URL for an AI client, guarded against SSRF.
//!
//! - Only `http` and `https`, no credentials in the URL, only GET.
//! - The host is resolved here, every resolved address is vetted
//!   ([`forbidden_ip`]: loopback, private, link-local and cloud metadata,
//!   unspecified, multicast, reserved, and the IPv4 forms hidden in IPv6), and
//!   the connection goes to the vetted addresses only, so a DNS answer that
//!   changes between check and connect (rebinding) cannot redirect it.
//! - Redirects are not followed by the HTTP client: each `Location` is
//!   resolved and vetted like the first URL, up to [`MAX_REDIRECTS`] hops.
//! - A host named in the site config's `http_fetch.allowlist` skips the
//!   address vetting (for an intranet wiki, say); nothing else does.
//! - The whole fetch has a deadline ([`TIMEOUT`]) and the body is cut at
//!   [`MAX_BODY_BYTES`].
//!
//! The client is reqwest with rustls (ring provider, the platform's roots) and
//! proxies disabled, since a proxy would make the address vetting meaningless.

use std::net::{IpAddr, Ipv4Addr, Ipv6Addr, SocketAddr};
use std::time::Duration;

use reqwest::Url;
use reqwest::redirect::Policy;
use serde::Serialize;

use crate::error::{Error, Result, codes};

pub const MAX_REDIRECTS: usize = 5;
pub const MAX_BODY_BYTES: usize = 1024 * 1024;
pub const TIMEOUT: Duration = Duration::from_secs(15);
const CONNECT_TIMEOUT: Duration = Duration::from_secs(5);

/// What a fetch returns. `body` holds UTF-8 text; other bytes come as `body_base64`.
#[derive(Debug, Clone, Serialize, PartialEq, Eq)]
pub struct Fetched {
    pub url: String,
    pub final_url: String,
    pub status: u16,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub content_type: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub body: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub body_base64: Option<String>,
    pub bytes: usize,
    pub truncated: bool,
    pub redirects: usize,
}

/// Whether an address must not be reached from `http_fetch`.
pub fn forbidden_ip(ip: IpAddr) -> bool {
    match ip {
        IpAddr::V4(v4) => forbidden_v4(v4),
        IpAddr::V6(v6) => forbidden_v6(v6),
    }
}

fn forbidden_v4(ip: Ipv4Addr) -> bool {
    let [a, b, c, _] = ip.octets();
    ip.is_unspecified()
        || ip.is_loopback()
        || ip.is_private()
        || ip.is_link_local() // 169.254/16, including the 169.254.169.254 metadata service
        || ip.is_multicast()
        || ip.is_broadcast()
        || ip.is_documentation()
        || a == 0 // "this network"
        || (a == 100 && (64..128).contains(&b)) // carrier-grade NAT 100.64/10
        || (a == 192 && b == 0 && c == 0) // IETF protocol assignments 192.0.0/24
        || (a == 198 && (b == 18 || b == 19)) // benchmarking 198.18/15
        || a >= 240 // reserved 240/4
}

fn forbidden_v6(ip: Ipv6Addr) -> bool {
    let seg = ip.segments();
    // IPv4 inside IPv6: mapped ::ffff:a.b.c.d, compatible ::a.b.c.d, NAT64 64:ff9b::/96.
    if let Some(v4) = ip.to_ipv4_mapped() {
        return forbidden_v4(v4);
    }
    if seg[..6] == [0, 0, 0, 0, 0, 0] && !ip.is_loopback() && !ip.is_unspecified() {
        return forbidden_v4(Ipv4Addr::from(((seg[6] as u32) << 16) | seg[7] as u32));
    }
    if seg[..6] == [0x64, 0xff9b, 0, 0, 0, 0] {
        return forbidden_v4(Ipv4Addr::from(((seg[6] as u32) << 16) | seg[7] as u32));
    }
    if seg[..5] == [0, 0, 0, 0, 0xffff] && seg[5] == 0 {
        // SIIT "IPv4-translated" ::ffff:0:a.b.c.d (RFC 2765).
        return forbidden_v4(Ipv4Addr::from(((seg[6] as u32) << 16) | seg[7] as u32));
    }
    if seg[..3] == [0x64, 0xff9b, 1] {
        // Local-use NAT64 64:ff9b:1::/48 (RFC 8215): the IPv4 address may sit
        // at any of several offsets and the range is never public; refuse it all.
        return true;
    }
    if seg[4] & 0xfdff == 0 && seg[5] == 0x5efe {
        // ISATAP interface id ::0:5efe:a.b.c.d (or ::200:5efe:…) under any prefix.
        if forbidden_v4(Ipv4Addr::from(((seg[6] as u32) << 16) | seg[7] as u32)) {
            return true;
        }
    }
    if seg[0] == 0x2002 {
        // 6to4 embeds an IPv4 address in the next 32 bits.
        return forbidden_v4(Ipv4Addr::from(((seg[1] as u32) << 16) | seg[2] as u32));
    }
    ip.is_unspecified()
        || ip.is_loopback()
        || ip.is_multicast()
        || (seg[0] & 0xfe00) == 0xfc00 // unique local fc00::/7 (includes fd00:ec2::254 metadata)
        || (seg[0] & 0xffc0) == 0xfe80 // link-local fe80::/10
        || (seg[0] & 0xffc0) == 0xfec0 // site-local fec0::/10 (deprecated)
        || (seg[0] == 0x2001 && seg[1] == 0x0db8) // documentation
        || (seg[0] == 0x2001 && seg[1] == 0) // Teredo
        || seg[0] == 0x0100 && seg[1..4] == [0, 0, 0] // discard-only 100::/64
}

fn invalid_url(message: impl Into<String>) -> Error {
    Error::invalid(
        codes::HTTP_FETCH_URL_INVALID,
        message,
        "give an absolute http:// or https:// URL without user name or password",
    )
}

fn blocked(host: &str, ip: Option<IpAddr>) -> Error {
    let what = ip.map(|ip| format!(" ({ip})")).unwrap_or_default();
    Error::new(
        codes::HTTP_FETCH_BLOCKED,
        format!("{host}{what} is a loopback, private, link-local or otherwise internal address"),
    )
    .hint("http_fetch only reaches public addresses; an admin can allow a host with the site config key http_fetch.allowlist")
    .detail(serde_json::json!({"host": host, "ip": ip.map(|i| i.to_string())}))
}

/// Parses and checks a URL's shape (scheme, no credentials, a host).
pub fn check_url(text: &str) -> Result<Url> {
    let url = Url::parse(text.trim()).map_err(|e| invalid_url(format!("cannot parse URL: {e}")))?;
    if !matches!(url.scheme(), "http" | "https") {
        return Err(invalid_url(format!(
            "the {} scheme is not allowed",
            url.scheme()
        )));
    }
    if !url.username().is_empty() || url.password().is_some() {
        return Err(invalid_url("URLs with credentials are not allowed"));
    }
    if url.host().is_none() {
        return Err(invalid_url("the URL has no host"));
    }
    Ok(url)
}

/// The vetted addresses to connect to for `url`'s host.
async fn vetted_addrs(url: &Url, allowlist: &[String]) -> Result<Vec<SocketAddr>> {
    let port = url
        .port_or_known_default()
        .ok_or_else(|| invalid_url("the URL has no port"))?;
    let host = url.host_str().unwrap_or_default();
    let bare = host.trim_start_matches('[').trim_end_matches(']');
    let allowed = allowlist.iter().any(|entry| {
        let (h, p) = allow_entry(entry);
        h.eq_ignore_ascii_case(bare.trim_end_matches('.')) && p.is_none_or(|p| p == port)
    });
    let addrs: Vec<SocketAddr> = match url.host() {
        Some(url::Host::Ipv4(ip)) => vec![SocketAddr::new(IpAddr::V4(ip), port)],
        Some(url::Host::Ipv6(ip)) => vec![SocketAddr::new(IpAddr::V6(ip), port)],
        _ => tokio::net::lookup_host((bare, port))
            .await
            .map_err(|e| {
                Error::new(
                    codes::HTTP_FETCH_FAILED,
                    format!("cannot resolve {bare}: {e}"),
                )
                .hint("check the host name")
            })?
            .collect(),
    };
    if addrs.is_empty() {
        return Err(Error::new(
            codes::HTTP_FETCH_FAILED,
            format!("{bare} has no addresses"),
        ));
    }
    if !allowed {
        // Every answer must be public: a mixed answer is how rebinding attacks start.
        if let Some(bad) = addrs.iter().find(|a| forbidden_ip(a.ip())) {
            return Err(blocked(bare, Some(bad.ip())));
        }
    }
    Ok(addrs)
}

/// An allowlist entry: `host`, `host:port`, `[v6]` or `[v6]:port` (a bare
/// IPv6 address names no port). A port limits the entry to that port.
fn allow_entry(entry: &str) -> (&str, Option<u16>) {
    if let Some(rest) = entry.strip_prefix('[') {
        return match rest.split_once(']') {
            Some((host, tail)) => (host, tail.strip_prefix(':').and_then(|p| p.parse().ok())),
            None => (rest, None),
        };
    }
    match entry.split_once(':') {
        Some((host, port)) if !port.contains(':') => match port.parse() {
            Ok(port) => (host, Some(port)),
            // A port that does not parse allows nothing rather than every port.
            Err(_) => ("", None),
        },
        _ => (entry, None),
    }
}

pub(crate) fn install_crypto_provider() {
    static ONCE: std::sync::Once = std::sync::Once::new();
    ONCE.call_once(|| {
        // Fails only if another provider is already installed, which is fine.
        let _ = rustls::crypto::ring::default_provider().install_default();
    });
}

fn client_for(url: &Url, addrs: &[SocketAddr]) -> Result<reqwest::Client> {
    install_crypto_provider();
    let mut builder = reqwest::Client::builder()
        .redirect(Policy::none())
        .no_proxy()
        .connect_timeout(CONNECT_TIMEOUT)
        .user_agent(concat!("gatehouse/", env!("CARGO_PKG_VERSION")));
    if let Some(url::Host::Domain(domain)) = url.host() {
        builder = builder.resolve_to_addrs(domain, addrs);
    }
    builder.build().map_err(|e| {
        Error::new(
            codes::HTTP_FETCH_FAILED,
            format!("cannot set up the HTTP client: {e}"),
        )
    })
}

/// A failed connection says only that the host could not be reached: whether
/// the port refused or the connection timed out would let the tool be used as
/// a port scanner, so that detail goes to the log only.
fn unreachable(url: &Url, e: &reqwest::Error) -> Error {
    tracing::debug!(error = %crate::redact::redact_urls(&e.to_string()), "http_fetch could not connect");
    Error::new(
        codes::HTTP_FETCH_FAILED,
        format!(
            "could not connect to {}",
            url.host_str().unwrap_or_default()
        ),
    )
    .hint("check that the URL is reachable")
}

fn fetch_failed(e: reqwest::Error) -> Error {
    // reqwest's Display includes the URL; the URL is the caller's own input.
    let mut text = e.to_string();
    let mut source = std::error::Error::source(&e);
    while let Some(s) = source {
        text.push_str(&format!(": {s}"));
        source = s.source();
    }
    Error::new(codes::HTTP_FETCH_FAILED, crate::redact::redact_urls(&text))
        .hint("check that the URL is reachable")
}

/// Fetches `url` with GET, following up to [`MAX_REDIRECTS`] vetted redirects.
pub async fn fetch(url: &str, allowlist: &[String]) -> Result<Fetched> {
    fetch_limited(url, allowlist, MAX_BODY_BYTES, MAX_REDIRECTS).await
}

/// [`fetch`], reading at most `max_bytes` of the body (`truncated` past it)
/// and following at most `max_redirects` redirects.
pub async fn fetch_limited(
    url: &str,
    allowlist: &[String],
    max_bytes: usize,
    max_redirects: usize,
) -> Result<Fetched> {
    let start = check_url(url)?;
    let inner = fetch_inner(start, allowlist, max_bytes, max_redirects);
    match tokio::time::timeout(TIMEOUT, inner).await {
        Ok(result) => result,
        Err(_) => Err(Error::new(
            codes::HTTP_FETCH_TIMEOUT,
            format!("the fetch took longer than {} s", TIMEOUT.as_secs()),
        )
        .hint("try a faster or smaller resource")),
    }
}

async fn fetch_inner(
    start: Url,
    allowlist: &[String],
    max_bytes: usize,
    max_redirects: usize,
) -> Result<Fetched> {
    let mut url = start.clone();
    let mut redirects = 0;
    loop {
        let addrs = vetted_addrs(&url, allowlist).await?;
        let client = client_for(&url, &addrs)?;
        let started = tokio::time::Instant::now();
        let mut resp = match client.get(url.clone()).send().await {
            Ok(resp) => resp,
            Err(e) if e.is_connect() || e.is_timeout() => {
                // A refusal waits out the connect timeout, so a refused port
                // and a filtered one look the same to the caller.
                tokio::time::sleep_until(started + CONNECT_TIMEOUT).await;
                return Err(unreachable(&url, &e));
            }
            Err(e) => return Err(fetch_failed(e)),
        };
        let status = resp.status();
        if status.is_redirection()
            && let Some(location) = resp.headers().get(reqwest::header::LOCATION)
        {
            if redirects == max_redirects {
                return Err(Error::new(
                    codes::HTTP_FETCH_TOO_MANY_REDIRECTS,
                    format!("more than {max_redirects} redirects"),
                ));
            }
            let location = location
                .to_str()
                .map_err(|_| invalid_url("the redirect location is not valid text"))?;
            let next = url
                .join(location)
                .map_err(|e| invalid_url(format!("bad redirect location: {e}")))?;
            url = check_url(next.as_str())?;
            redirects += 1;
            continue;
        }
        let content_type = resp
            .headers()
            .get(reqwest::header::CONTENT_TYPE)
            .and_then(|v| v.to_str().ok())
            .map(str::to_owned);
        let mut body = Vec::new();
        let mut truncated = false;
        while let Some(chunk) = resp.chunk().await.map_err(fetch_failed)? {
            let room = max_bytes - body.len();
            if chunk.len() > room {
                body.extend_from_slice(&chunk[..room]);
                truncated = true;
                break;
            }
            body.extend_from_slice(&chunk);
        }
        let bytes = body.len();
        let (text, b64) = match String::from_utf8(body) {
            Ok(text) => (Some(text), None),
            Err(e) => {
                let raw = e.into_bytes();
                // A cut may split a UTF-8 character: keep the valid text before it.
                match std::str::from_utf8(&raw) {
                    Err(err) if truncated && err.error_len().is_none() => (
                        Some(String::from_utf8_lossy(&raw[..err.valid_up_to()]).into_owned()),
                        None,
                    ),
                    _ => (None, Some(crate::site::media::encode_base64(&raw))),
                }
            }
        };
        return Ok(Fetched {
            url: start.to_string(),
            final_url: url.to_string(),
            status: status.as_u16(),
            content_type,
            body: text,
            body_base64: b64,
            bytes,
            truncated,
            redirects,
        });
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ip(s: &str) -> IpAddr {
        s.parse().unwrap()
    }

    #[test]
    fn internal_addresses_are_forbidden() {
        for bad in [
            "127.0.0.1",
            "127.1.2.3",
            "0.0.0.0",
            "10.0.0.1",
            "172.16.5.4",
            "192.168.1.1",
            "169.254.169.254",
            "100.64.0.1",
            "224.0.0.1",
            "255.255.255.255",
            "240.0.0.1",
            "::",
            "::1",
            "::ffff:127.0.0.1",
            "::ffff:169.254.169.254",
            "::ffff:10.1.2.3",
            "::127.0.0.1",
            "64:ff9b::7f00:1",
            "::ffff:0:127.0.0.1",
            "::ffff:0:a9fe:a9fe",
            "64:ff9b:1::7f00:1",
            "64:ff9b:1:ffff::1",
            "2001:db9::5efe:7f00:1",
            "2a00:1450::200:5efe:a00:1",
            "2002:7f00:1::",
            "fe80::1",
            "fc00::1",
            "fd00:ec2::254",
            "ff02::1",
            "2001:db8::1",
        ] {
            assert!(forbidden_ip(ip(bad)), "{bad} must be forbidden");
        }
    }

    #[test]
    fn public_addresses_are_allowed() {
        for good in [
            "93.184.216.34",
            "8.8.8.8",
            "1.1.1.1",
            "2606:4700:4700::1111",
            "::ffff:8.8.8.8",
        ] {
            assert!(!forbidden_ip(ip(good)), "{good} must be allowed");
        }
    }

    #[test]
    fn url_shape_is_checked() {
        assert!(check_url("https://example.com/a?b=c").is_ok());
        for bad in [
            "ftp://example.com/",
            "file:///etc/passwd",
            "https://user:pw@example.com/",
            "not a url",
            "gopher://x",
        ] {
            assert_eq!(
                check_url(bad).unwrap_err().code,
                codes::HTTP_FETCH_URL_INVALID,
                "{bad}"
            );
        }
    }

    #[test]
    fn allowlist_entries_may_name_a_port() {
        assert_eq!(allow_entry("example.com"), ("example.com", None));
        assert_eq!(allow_entry("example.com:8080"), ("example.com", Some(8080)));
        assert_eq!(allow_entry("[::1]:81"), ("::1", Some(81)));
        assert_eq!(allow_entry("[::1]"), ("::1", None));
        assert_eq!(allow_entry("::1"), ("::1", None));
        assert_eq!(allow_entry("example.com:http"), ("", None));
    }

    #[tokio::test]
    async fn loopback_is_refused_unless_allowlisted() {
        let url = check_url("http://127.0.0.1:9/").unwrap();
        assert_eq!(
            vetted_addrs(&url, &[]).await.unwrap_err().code,
            codes::HTTP_FETCH_BLOCKED
        );
        assert!(vetted_addrs(&url, &["127.0.0.1".into()]).await.is_ok());
        let url = check_url("http://[::1]:9/").unwrap();
        assert_eq!(
            vetted_addrs(&url, &[]).await.unwrap_err().code,
            codes::HTTP_FETCH_BLOCKED
        );
        let url = check_url("http://localhost:9/").unwrap();
        assert_eq!(
            vetted_addrs(&url, &[]).await.unwrap_err().code,
            codes::HTTP_FETCH_BLOCKED
        );
    }
}

//! Who may reach the endpoint: the `Host` allowlist and the browser `Origin`
//! allowlist (the DNS-rebinding defence), and the client's address, taken
//! from `X-Forwarded-For` only when the connection comes from a trusted proxy.

use std::net::{IpAddr, SocketAddr};

use hyper::header::{HOST, ORIGIN};
use hyper::{HeaderMap, Uri};

/// The names the server answers to and the browser origins it accepts.
#[derive(Debug, Clone)]
pub struct Exposure {
    /// Lowercase `host` or `host:port` values; a bare host matches any port.
    pub hosts: Vec<String>,
    /// Lowercase `scheme://host[:port]` values.
    pub origins: Vec<String>,
    /// Proxies whose `X-Forwarded-*` headers are believed.
    pub proxies: Vec<IpAddr>,
}

impl Exposure {
    /// The loopback names for `listen`, plus what the operator added.
    pub fn new(
        listen: SocketAddr,
        hosts: &[String],
        origins: &[String],
        proxies: &[IpAddr],
    ) -> Self {
        let port = listen.port();
        let mut all_hosts: Vec<String> = ["localhost", "127.0.0.1", "[::1]"]
            .iter()
            .map(|h| format!("{h}:{port}"))
            .collect();
        all_hosts.extend(["localhost", "127.0.0.1", "[::1]"].map(String::from));
        all_hosts.extend(hosts.iter().map(|h| h.to_ascii_lowercase()));
        let mut all_origins: Vec<String> = ["localhost", "127.0.0.1", "[::1]"]
            .iter()
            .flat_map(|h| [format!("http://{h}:{port}"), format!("https://{h}:{port}")])
            .collect();
        all_origins.extend(
            origins
                .iter()
                .map(|o| o.trim_end_matches('/').to_ascii_lowercase()),
        );
        Exposure {
            hosts: all_hosts,
            origins: all_origins,
            proxies: proxies.iter().map(IpAddr::to_canonical).collect(),
        }
    }

    fn trusts(&self, peer: SocketAddr) -> bool {
        self.proxies.contains(&peer.ip().to_canonical())
    }

    /// The client's address: the peer, or the last `X-Forwarded-For` hop (the
    /// one the trusted proxy appended) when the peer is a trusted proxy. A
    /// last hop that names no address (`unknown`, an obfuscated name) is the
    /// unspecified address, which no `--from` network of a key admits:
    /// skipping it had believed the hop before it, which the client wrote.
    pub fn client(&self, peer: SocketAddr, headers: &HeaderMap) -> IpAddr {
        if !self.trusts(peer) {
            return peer.ip().to_canonical();
        }
        let last = headers
            .get_all("x-forwarded-for")
            .iter()
            .flat_map(|v| v.as_bytes().split(|b| *b == b','))
            .next_back();
        match last {
            None => peer.ip().to_canonical(),
            Some(hop) => std::str::from_utf8(hop)
                .ok()
                .and_then(|h| hop_address(h.trim()))
                .map(|ip| ip.to_canonical())
                .unwrap_or(IpAddr::V4(std::net::Ipv4Addr::UNSPECIFIED)),
        }
    }

    /// Checks `Host` (or a trusted proxy's `X-Forwarded-Host`), the name an
    /// absolute-form request target gives (`POST http://name/mcp`: HTTP/1.1
    /// has an origin server take the name from it and ignore `Host`, so a
    /// front end may route by it) and `Origin`; the refusal names which.
    pub fn check(
        &self,
        peer: SocketAddr,
        target: &Uri,
        headers: &HeaderMap,
    ) -> Result<(), Refused> {
        // From a trusted proxy, the name it appended: the last value of the
        // last line, as for `X-Forwarded-For` (the first had decided, which a
        // proxy that appends leaves to the client).
        let forwarded = self
            .trusts(peer)
            .then(|| headers.get_all("x-forwarded-host").iter().next_back())
            .flatten()
            .map(|h| {
                h.to_str()
                    .map(|v| v.rsplit(',').next().unwrap_or("").trim())
            });
        // One Host, well formed: `localhost:8808:1` or `localhost:x` would
        // otherwise match `localhost` once the text after the last colon went.
        let host = match forwarded {
            Some(h) => h.ok(),
            None => {
                let mut all = headers.get_all(HOST).iter();
                all.next()
                    .filter(|_| all.next().is_none())
                    .and_then(|h| h.to_str().ok())
            }
        };
        let Some(host) = host else {
            return Err(Refused::Host);
        };
        if !self.serves(host) || target.authority().is_some_and(|a| !self.serves(a.as_str())) {
            return Err(Refused::Host);
        }
        // Every Origin sent must be allowed: with two, the first had decided.
        for origin in headers.get_all(ORIGIN) {
            if !self.allows_origin(origin.to_str().unwrap_or("")) {
                return Err(Refused::Origin);
            }
        }
        Ok(())
    }

    /// Whether `name` (`host` or `host:port`, well formed) is one of ours.
    fn serves(&self, name: &str) -> bool {
        let Some(bare) = bare_host(name) else {
            return false;
        };
        // The lists are lowercase: compared without a lowercased copy per request.
        self.hosts
            .iter()
            .any(|h| h.eq_ignore_ascii_case(name) || h.eq_ignore_ascii_case(bare))
    }

    /// Whether a browser page of `origin` may call the server.
    pub fn allows_origin(&self, origin: &str) -> bool {
        self.origins.iter().any(|o| o.eq_ignore_ascii_case(origin))
    }
}

/// The address of one `X-Forwarded-For` hop: bare, or with a port as some
/// proxies write it (`192.0.2.1:5000`, `[2001:db8::1]:443`).
fn hop_address(hop: &str) -> Option<IpAddr> {
    if let Ok(ip) = hop.parse() {
        return Some(ip);
    }
    if let Some(rest) = hop.strip_prefix('[') {
        // `[v6]` or `[v6]:port`, nothing else after the bracket.
        let (ip, after) = rest.split_once(']')?;
        let port_ok = after.is_empty()
            || after
                .strip_prefix(':')
                .is_some_and(|p| p.parse::<u16>().is_ok());
        return port_ok.then(|| ip.parse().ok()).flatten();
    }
    hop.parse::<SocketAddr>().ok().map(|s| s.ip())
}

/// Why a request was refused before anything else was read.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Refused {
    Host,
    Origin,
}

/// A `Host` value's host without the port, or `None` unless it is a
/// bracketed IPv6 literal or a name of letters, digits, `.`, `-` and `_`,
/// followed by at most one `:` and a port of digits.
fn bare_host(value: &str) -> Option<&str> {
    let (bare, port) = match value.strip_prefix('[') {
        Some(rest) => {
            let end = rest.find(']')?;
            let literal = &rest[..end];
            if literal.is_empty()
                || !literal
                    .bytes()
                    .all(|b| b.is_ascii_hexdigit() || b == b':' || b == b'.')
            {
                return None;
            }
            (&value[..end + 2], &rest[end + 1..])
        }
        None => {
            let end = value.find(':').unwrap_or(value.len());
            let name = &value[..end];
            if name.is_empty()
                || !name
                    .bytes()
                    .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'.' | b'-' | b'_'))
            {
                return None;
            }
            (name, &value[end..])
        }
    };
    match port.strip_prefix(':') {
        None if port.is_empty() => Some(bare),
        Some(digits)
            if digits.parse::<u16>().is_ok() && digits.bytes().all(|b| b.is_ascii_digit()) =>
        {
            Some(bare)
        }
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use hyper::header::HeaderValue;

    fn headers(pairs: &[(&'static str, &str)]) -> HeaderMap {
        let mut h = HeaderMap::new();
        for (k, v) in pairs {
            h.append(*k, HeaderValue::from_str(v).unwrap());
        }
        h
    }

    fn root() -> Uri {
        Uri::from_static("/mcp")
    }

    fn exposure() -> Exposure {
        Exposure::new(
            "127.0.0.1:8808".parse().unwrap(),
            &["mcp.example.org".into()],
            &["https://app.example.org".into()],
            &["10.0.0.1".parse().unwrap()],
        )
    }

    #[test]
    fn forged_host_and_foreign_origin_are_refused() {
        let e = exposure();
        let peer: SocketAddr = "127.0.0.1:5000".parse().unwrap();
        assert_eq!(
            e.check(peer, &root(), &headers(&[("host", "evil.example")])),
            Err(Refused::Host)
        );
        assert_eq!(e.check(peer, &root(), &headers(&[])), Err(Refused::Host));
        assert_eq!(
            e.check(
                peer,
                &root(),
                &headers(&[
                    ("host", "127.0.0.1:8808"),
                    ("origin", "https://evil.example")
                ])
            ),
            Err(Refused::Origin)
        );
        assert_eq!(
            e.check(
                peer,
                &root(),
                &headers(&[("host", "localhost:8808"), ("origin", "null")])
            ),
            Err(Refused::Origin)
        );
        assert!(
            e.check(peer, &root(), &headers(&[("host", "127.0.0.1:8808")]))
                .is_ok()
        );
        assert!(
            e.check(peer, &root(), &headers(&[("host", "[::1]:8808")]))
                .is_ok()
        );
        assert!(
            e.check(peer, &root(), &headers(&[("host", "MCP.example.org")]))
                .is_ok()
        );
        assert!(
            e.check(
                peer,
                &root(),
                &headers(&[
                    ("host", "localhost:8808"),
                    ("origin", "https://app.example.org")
                ])
            )
            .is_ok()
        );
        // Two Origins: each must be allowed (the first had decided alone).
        assert_eq!(
            e.check(
                peer,
                &root(),
                &headers(&[
                    ("host", "localhost:8808"),
                    ("origin", "https://app.example.org"),
                    ("origin", "https://evil.example")
                ])
            ),
            Err(Refused::Origin)
        );
    }

    #[test]
    fn a_host_with_junk_after_an_allowed_name_is_refused() {
        let e = exposure();
        let peer: SocketAddr = "127.0.0.1:5000".parse().unwrap();
        for host in [
            "localhost:8808:1",
            "localhost:x",
            "localhost:",
            "localhost:+80",
            "localhost:99999",
            "mcp.example.org:80/evil",
            "evil.example@localhost",
            "[::1]x:8808",
            "[::1]:8808:1",
            "[]",
            "",
        ] {
            assert_eq!(
                e.check(peer, &root(), &headers(&[("host", host)])),
                Err(Refused::Host),
                "{host:?}"
            );
        }
        assert_eq!(
            e.check(
                peer,
                &root(),
                &headers(&[("host", "127.0.0.1:8808"), ("host", "evil.example")])
            ),
            Err(Refused::Host),
            "two Host headers"
        );
        for host in [
            "localhost:8808",
            "localhost",
            "[::1]",
            "mcp.example.org:443",
        ] {
            assert!(
                e.check(peer, &root(), &headers(&[("host", host)])).is_ok(),
                "{host:?}"
            );
        }
    }

    #[test]
    fn an_absolute_form_target_must_name_an_allowed_host_too() {
        let e = exposure();
        let peer: SocketAddr = "127.0.0.1:5000".parse().unwrap();
        let h = headers(&[("host", "127.0.0.1:8808")]);
        for target in [
            "http://evil.example/mcp",
            "http://evil.example:8808/mcp",
            "http://evil@127.0.0.1:8808/mcp",
        ] {
            assert_eq!(
                e.check(peer, &Uri::from_static(target), &h),
                Err(Refused::Host),
                "{target}"
            );
        }
        for target in ["http://127.0.0.1:8808/mcp", "https://MCP.example.org/mcp"] {
            assert!(
                e.check(peer, &Uri::from_static(target), &h).is_ok(),
                "{target}"
            );
        }
    }

    #[test]
    fn forwarded_headers_count_only_from_a_trusted_proxy() {
        let e = exposure();
        let stranger: SocketAddr = "192.0.2.9:5000".parse().unwrap();
        let proxy: SocketAddr = "10.0.0.1:5000".parse().unwrap();
        let h = headers(&[
            ("host", "127.0.0.1"),
            ("x-forwarded-host", "evil.example"),
            ("x-forwarded-for", "198.51.100.1, 203.0.113.7"),
        ]);
        assert!(
            e.check(stranger, &root(), &h).is_ok(),
            "an untrusted X-Forwarded-Host is ignored"
        );
        assert_eq!(e.client(stranger, &h), stranger.ip());
        assert_eq!(e.check(proxy, &root(), &h), Err(Refused::Host));
        // The proxy's own value is the last one, on a line or in a list.
        for (lines, ok) in [
            (&["mcp.example.org", "evil.example"][..], false),
            (&["evil.example", "mcp.example.org"][..], true),
            (&["mcp.example.org, evil.example"][..], false),
            (&["evil.example, mcp.example.org"][..], true),
        ] {
            let mut h = headers(&[("host", "127.0.0.1")]);
            for l in lines {
                h.append("x-forwarded-host", HeaderValue::from_str(l).unwrap());
            }
            assert_eq!(e.check(proxy, &root(), &h).is_ok(), ok, "{lines:?}");
        }
        assert_eq!(
            e.client(proxy, &h),
            "203.0.113.7".parse::<IpAddr>().unwrap()
        );
    }

    #[test]
    fn a_last_forwarded_hop_that_names_no_address_never_believes_the_one_before() {
        let e = exposure();
        let proxy: SocketAddr = "10.0.0.1:5000".parse().unwrap();
        let client = |xff: &str| e.client(proxy, &headers(&[("x-forwarded-for", xff)]));
        let unspecified: IpAddr = "0.0.0.0".parse().unwrap();
        for xff in [
            "10.1.2.3, unknown",
            "10.1.2.3, _hidden",
            "10.1.2.3, ",
            "10.1.2.3,",
        ] {
            assert_eq!(client(xff), unspecified, "{xff:?}");
        }
        assert_eq!(
            client("10.1.2.3, 203.0.113.9:51234"),
            "203.0.113.9".parse::<IpAddr>().unwrap()
        );
        assert_eq!(
            client("10.1.2.3, [2001:db8::9]:443"),
            "2001:db8::9".parse::<IpAddr>().unwrap()
        );
        assert_eq!(
            client("[2001:db8::9]"),
            "2001:db8::9".parse::<IpAddr>().unwrap()
        );
        assert_eq!(client("10.1.2.3, [2001:db8::9]junk"), unspecified);
        // Two header lines are one list: the last line's last hop counts.
        let two = headers(&[
            ("x-forwarded-for", "203.0.113.9"),
            ("x-forwarded-for", "10.1.2.3"),
        ]);
        assert_eq!(e.client(proxy, &two), "10.1.2.3".parse::<IpAddr>().unwrap());
        // No header from the proxy: the proxy itself.
        assert_eq!(e.client(proxy, &headers(&[])), proxy.ip());
    }

    #[test]
    fn a_dual_stack_listeners_mapped_peer_is_the_ipv4_address_it_maps() {
        let e = exposure();
        let xff = headers(&[("x-forwarded-for", "203.0.113.9")]);
        let proxy: SocketAddr = "[::ffff:10.0.0.1]:5000".parse().unwrap();
        assert_eq!(
            e.client(proxy, &xff),
            "203.0.113.9".parse::<IpAddr>().unwrap(),
            "the trusted proxy, seen through a dual-stack socket"
        );
        let stranger: SocketAddr = "[::ffff:192.0.2.9]:5000".parse().unwrap();
        assert_eq!(
            e.client(stranger, &xff),
            "192.0.2.9".parse::<IpAddr>().unwrap()
        );
    }
}

//! Who may reach the endpoint: the `Host` allowlist and the browser `Origin`
//! allowlist (the DNS-rebinding defence), and the client's address, taken
//! from `X-Forwarded-For` only when the connection comes from a trusted proxy.

use std::net::{IpAddr, SocketAddr};

use hyper::HeaderMap;
use hyper::header::{HOST, ORIGIN};

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
            proxies: proxies.to_vec(),
        }
    }

    fn trusts(&self, peer: SocketAddr) -> bool {
        self.proxies.contains(&peer.ip())
    }

    /// The client's address: the peer, or the last `X-Forwarded-For` hop when
    /// the peer is a trusted proxy.
    pub fn client(&self, peer: SocketAddr, headers: &HeaderMap) -> IpAddr {
        if self.trusts(peer)
            && let Some(ip) = headers
                .get_all("x-forwarded-for")
                .iter()
                .filter_map(|v| v.to_str().ok())
                .flat_map(|v| v.split(','))
                .filter_map(|h| h.trim().parse::<IpAddr>().ok())
                .next_back()
        {
            return ip;
        }
        peer.ip()
    }

    /// Checks `Host` (or a trusted proxy's `X-Forwarded-Host`) and `Origin`;
    /// the refusal names which and why.
    pub fn check(&self, peer: SocketAddr, headers: &HeaderMap) -> Result<(), Refused> {
        let forwarded = self
            .trusts(peer)
            .then(|| headers.get("x-forwarded-host"))
            .flatten();
        let host = forwarded
            .or_else(|| headers.get(HOST))
            .and_then(|h| h.to_str().ok());
        let Some(host) = host else {
            return Err(Refused::Host);
        };
        // The lists are lowercase: compared without a lowercased copy per request.
        let bare = strip_port(host);
        if !self
            .hosts
            .iter()
            .any(|h| h.eq_ignore_ascii_case(host) || h.eq_ignore_ascii_case(bare))
        {
            return Err(Refused::Host);
        }
        if let Some(origin) = headers.get(ORIGIN) {
            let origin = origin.to_str().unwrap_or("");
            if !self.origins.iter().any(|o| o.eq_ignore_ascii_case(origin)) {
                return Err(Refused::Origin);
            }
        }
        Ok(())
    }
}

/// Why a request was refused before anything else was read.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Refused {
    Host,
    Origin,
}

fn strip_port(host: &str) -> &str {
    if let Some(rest) = host.strip_prefix('[') {
        // An IPv6 literal: keep the brackets, drop the port.
        return rest.find(']').map(|i| &host[..i + 2]).unwrap_or(host);
    }
    host.rsplit_once(':').map(|(h, _)| h).unwrap_or(host)
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
            e.check(peer, &headers(&[("host", "evil.example")])),
            Err(Refused::Host)
        );
        assert_eq!(e.check(peer, &headers(&[])), Err(Refused::Host));
        assert_eq!(
            e.check(
                peer,
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
                &headers(&[("host", "localhost:8808"), ("origin", "null")])
            ),
            Err(Refused::Origin)
        );
        assert!(
            e.check(peer, &headers(&[("host", "127.0.0.1:8808")]))
                .is_ok()
        );
        assert!(e.check(peer, &headers(&[("host", "[::1]:8808")])).is_ok());
        assert!(
            e.check(peer, &headers(&[("host", "MCP.example.org")]))
                .is_ok()
        );
        assert!(
            e.check(
                peer,
                &headers(&[
                    ("host", "localhost:8808"),
                    ("origin", "https://app.example.org")
                ])
            )
            .is_ok()
        );
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
            e.check(stranger, &h).is_ok(),
            "an untrusted X-Forwarded-Host is ignored"
        );
        assert_eq!(e.client(stranger, &h), stranger.ip());
        assert_eq!(e.check(proxy, &h), Err(Refused::Host));
        assert_eq!(
            e.client(proxy, &h),
            "203.0.113.7".parse::<IpAddr>().unwrap()
        );
    }
}

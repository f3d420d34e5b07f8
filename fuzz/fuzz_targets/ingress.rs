//! One HTTP request as the ingress policy judges it, before any route: the method on the first
//! line, the target on the second, then `name: value` headers; the first byte picks the server's
//! mode and the peer. Judging never panics, and nothing is admitted without the capability or
//! with an ambiguous path.
#![no_main]

use std::net::{IpAddr, Ipv4Addr};

use heartwood_web::{Capability, IngressPolicy, Mode};
use libfuzzer_sys::fuzz_target;

const SECRET: &str = "5ec2e7";

fuzz_target!(|bytes: &[u8]| {
    let Some((&pick, rest)) = bytes.split_first() else {
        return;
    };
    let text = String::from_utf8_lossy(rest);
    let mut lines = text.split('\n');
    let method = lines.next().unwrap_or_default();
    let target = lines.next().unwrap_or_default();
    let headers: Vec<(String, String)> = lines
        .filter_map(|line| line.split_once(':'))
        .map(|(name, value)| (name.to_owned(), value.trim().to_owned()))
        .collect();
    let mode = match pick % 3 {
        0 => Mode::Loopback,
        1 => Mode::JupyterProxy {
            base_path: "/user/alice/proxy/8765/".to_owned(),
            external_host: "hub.example.org".to_owned(),
        },
        _ => Mode::TrustedProxy {
            origin: "https://heartwood.example.org".to_owned(),
            base_path: "/heartwood/".to_owned(),
            proxies: vec![IpAddr::V4(Ipv4Addr::new(10, 0, 0, 2))],
        },
    };
    let peer = match (pick / 3) % 3 {
        0 => IpAddr::V4(Ipv4Addr::LOCALHOST),
        1 => IpAddr::V4(Ipv4Addr::new(10, 0, 0, 2)),
        _ => IpAddr::V4(Ipv4Addr::new(203, 0, 113, 9)),
    };
    let policy = IngressPolicy::new(mode, 8765, Capability::from_secret(SECRET));
    if let Ok(admitted) = policy.admit(method, target, &headers, peer) {
        let route = &admitted.route;
        assert!(route.starts_with('/'), "route {route:?}");
        assert!(
            !route.contains("//")
                && !route.contains(['\\', '%'])
                && !route.split('/').any(|s| s == "." || s == ".."),
            "an ambiguous path was admitted: {route:?}"
        );
        let offered = target.contains(SECRET) || headers.iter().any(|(_, v)| v.contains(SECRET));
        assert!(offered, "a request without the capability was admitted");
    }
});

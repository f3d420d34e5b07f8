//! The only way out of the sandbox's network namespace: Heartwood's own proxy, for the hosts a
//! project or platform names (`network = ["pypi.org", "files.pythonhosted.org"]`), nothing else.
//!
//! The proxy listens on a Unix socket in a private directory, bound into the sandbox at
//! [`SOCKET_INSIDE`]; inside, a small bridge (the system's Python, started by the prelude)
//! listens on `127.0.0.1:3128` of the sandbox's own loopback and passes each connection to the
//! socket, and the shell's `http_proxy`/`https_proxy` name it. The proxy answers `CONNECT
//! host:port` (HTTPS) and absolute-form HTTP requests, only for a listed host (exactly, or
//! under a `*.` entry), resolves names itself on the host, and keeps a record of each
//! connection (host, port, bytes each way, time), allowed or refused, for the terminal to
//! report with the command's result.

use std::path::PathBuf;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use serde::Serialize;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpStream, UnixListener, UnixStream};

/// Where the proxy's socket appears inside the sandbox.
pub const SOCKET_INSIDE: &str = "/run/heartwood/proxy.sock";

/// The proxy's address on the sandbox's own loopback, as the shell's proxy variables name it.
pub const PROXY_URL: &str = "http://127.0.0.1:3128";

/// The longest request head the proxy reads.
const MAX_HEAD: usize = 16 * 1024;

/// How long a connection to a listed host may take to open.
const CONNECT_TIMEOUT: Duration = Duration::from_secs(20);

/// The hosts commands may reach.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
pub struct NetworkPolicy {
    hosts: Vec<String>,
}

impl NetworkPolicy {
    /// Only `hosts` (names or addresses, exactly; `*.example.org` for its subdomains).
    pub fn new(hosts: impl IntoIterator<Item = String>) -> Self {
        let mut hosts: Vec<String> = hosts
            .into_iter()
            .map(|h| h.trim().trim_end_matches('.').to_ascii_lowercase())
            .filter(|h| !h.is_empty())
            .collect();
        hosts.sort();
        hosts.dedup();
        NetworkPolicy { hosts }
    }

    /// Whether no host is listed (no network at all).
    pub fn is_empty(&self) -> bool {
        self.hosts.is_empty()
    }

    /// The listed hosts.
    pub fn hosts(&self) -> &[String] {
        &self.hosts
    }

    /// Whether `host` may be reached.
    pub fn allows(&self, host: &str) -> bool {
        let host = host.trim_end_matches('.').to_ascii_lowercase();
        self.hosts
            .iter()
            .any(|entry| match entry.strip_prefix("*.") {
                Some(domain) => {
                    host.len() > domain.len() + 1 && host.ends_with(&format!(".{domain}"))
                }
                None => *entry == host,
            })
    }
}

/// One connection a confined command asked for.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Connection {
    /// The host asked for.
    pub host: String,
    /// The port.
    pub port: u16,
    /// Whether it was let through (else why not).
    pub refused: Option<String>,
    /// Bytes from the command to the host.
    pub sent: u64,
    /// Bytes from the host to the command.
    pub received: u64,
    /// How long it was open, in milliseconds.
    pub millis: u64,
}

impl Connection {
    /// The connection in one line, as the command's result reports it.
    pub fn describe(&self) -> String {
        match &self.refused {
            Some(why) => format!("network: {}:{} refused ({why})", self.host, self.port),
            None => format!(
                "network: {}:{} ({} bytes sent, {} received, {:.2} s)",
                self.host,
                self.port,
                self.sent,
                self.received,
                self.millis as f64 / 1000.0
            ),
        }
    }
}

/// A running proxy; dropping it stops it and removes its socket.
#[derive(Debug)]
pub struct Proxy {
    dir: tempfile::TempDir,
    log: Arc<Mutex<Vec<Connection>>>,
    task: tokio::task::JoinHandle<()>,
}

impl Drop for Proxy {
    fn drop(&mut self) {
        self.task.abort();
    }
}

impl Proxy {
    /// Starts a proxy for `policy` on a socket in a new private directory.
    pub fn start(policy: NetworkPolicy) -> std::io::Result<Proxy> {
        let dir = tempfile::Builder::new()
            .prefix("heartwood-net-")
            .tempdir()?;
        let listener = UnixListener::bind(dir.path().join("proxy.sock"))?;
        let log = Arc::new(Mutex::new(Vec::new()));
        let recording = Arc::clone(&log);
        let policy = Arc::new(policy);
        let task = tokio::spawn(async move {
            while let Ok((stream, _)) = listener.accept().await {
                let policy = Arc::clone(&policy);
                let recording = Arc::clone(&recording);
                tokio::spawn(async move {
                    if let Some(connection) = serve(stream, &policy).await
                        && let Ok(mut log) = recording.lock()
                    {
                        log.push(connection);
                    }
                });
            }
        });
        Ok(Proxy { dir, log, task })
    }

    /// The socket on the host, to bind into the sandbox at [`SOCKET_INSIDE`].
    pub fn socket(&self) -> PathBuf {
        self.dir.path().join("proxy.sock")
    }

    /// The connections recorded since the last call.
    pub fn take_log(&self) -> Vec<Connection> {
        self.log
            .lock()
            .map(|mut l| std::mem::take(&mut *l))
            .unwrap_or_default()
    }
}

/// Reads one request head and answers it; the record of the connection, if it named one.
async fn serve(mut client: UnixStream, policy: &NetworkPolicy) -> Option<Connection> {
    let mut head = Vec::new();
    let mut buf = [0u8; 4096];
    while !head.windows(4).any(|w| w == b"\r\n\r\n") {
        let n = client.read(&mut buf).await.ok()?;
        if n == 0 || head.len() + n > MAX_HEAD {
            return None;
        }
        head.extend_from_slice(&buf[..n]);
    }
    let line = head.split(|b| *b == b'\r').next()?;
    let line = std::str::from_utf8(line).ok()?;
    let mut words = line.split(' ');
    let (method, target) = (words.next()?, words.next()?);
    let tunnel = method.eq_ignore_ascii_case("CONNECT");
    let (host, port) = if tunnel {
        split_host_port(target, 443)?
    } else {
        let rest = target.strip_prefix("http://")?;
        split_host_port(rest.split('/').next()?, 80)?
    };
    let mut connection = Connection {
        host: host.clone(),
        port,
        refused: None,
        sent: 0,
        received: 0,
        millis: 0,
    };
    if !policy.allows(&host) {
        connection.refused = Some("not a host this project may reach".to_owned());
        let _ = client
            .write_all(b"HTTP/1.1 403 Forbidden\r\nContent-Length: 0\r\n\r\n")
            .await;
        return Some(connection);
    }
    let started = Instant::now();
    let upstream =
        tokio::time::timeout(CONNECT_TIMEOUT, TcpStream::connect((host.as_str(), port))).await;
    let mut upstream = match upstream {
        Ok(Ok(upstream)) => upstream,
        Ok(Err(e)) => {
            connection.refused = Some(format!("cannot connect: {e}"));
            let _ = client
                .write_all(b"HTTP/1.1 502 Bad Gateway\r\nContent-Length: 0\r\n\r\n")
                .await;
            return Some(connection);
        }
        Err(_) => {
            connection.refused = Some("the host did not answer in time".to_owned());
            let _ = client
                .write_all(b"HTTP/1.1 504 Gateway Timeout\r\nContent-Length: 0\r\n\r\n")
                .await;
            return Some(connection);
        }
    };
    let opened = if tunnel {
        client
            .write_all(b"HTTP/1.1 200 Connection established\r\n\r\n")
            .await
    } else {
        upstream.write_all(&head).await
    };
    if opened.is_ok()
        && let Ok((sent, received)) =
            tokio::io::copy_bidirectional(&mut client, &mut upstream).await
    {
        connection.sent = sent + if tunnel { 0 } else { head.len() as u64 };
        connection.received = received;
    }
    connection.millis = u64::try_from(started.elapsed().as_millis()).unwrap_or(u64::MAX);
    Some(connection)
}

/// `host:port` (or `[v6]:port`, or `host` alone with `default`).
fn split_host_port(target: &str, default: u16) -> Option<(String, u16)> {
    let (host, port) = match target.strip_prefix('[') {
        Some(v6) => {
            let (host, rest) = v6.split_once(']')?;
            (host, rest.strip_prefix(':'))
        }
        None => match target.rsplit_once(':') {
            Some((host, port)) => (host, Some(port)),
            None => (target, None),
        },
    };
    let port = match port {
        Some(p) => p.parse().ok()?,
        None => default,
    };
    (!host.is_empty()).then(|| (host.to_ascii_lowercase(), port))
}

/// The bridge the prelude starts inside the sandbox: the sandbox's loopback `127.0.0.1:3128`
/// to the proxy's socket, one connection for each.
pub(crate) const BRIDGE: &str = r#"import asyncio
async def pipe(r, w):
    try:
        while True:
            d = await r.read(65536)
            if not d:
                break
            w.write(d)
            await w.drain()
    except Exception:
        pass
    finally:
        w.close()
async def handle(r, w):
    try:
        ur, uw = await asyncio.open_unix_connection('/run/heartwood/proxy.sock')
    except Exception:
        w.close()
        return
    await asyncio.gather(pipe(r, uw), pipe(ur, w))
async def main():
    s = await asyncio.start_server(handle, '127.0.0.1', 3128)
    async with s:
        await s.serve_forever()
asyncio.run(main())
"#;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_listed_hosts_and_their_declared_subdomains_are_allowed() {
        let policy = NetworkPolicy::new(["PyPI.org.".to_owned(), "*.pythonhosted.org".to_owned()]);
        assert!(policy.allows("pypi.org"));
        assert!(policy.allows("files.pythonhosted.org"));
        for no in [
            "pythonhosted.org",
            "evil-pypi.org",
            "pypi.org.evil.com",
            "xpythonhosted.org",
        ] {
            assert!(!policy.allows(no), "{no}");
        }
        assert_eq!(
            split_host_port("[::1]:8080", 80),
            Some(("::1".into(), 8080))
        );
        assert_eq!(
            split_host_port("pypi.org", 443),
            Some(("pypi.org".into(), 443))
        );
    }
}

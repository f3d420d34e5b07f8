//! The accept loop's limits over real TCP: a server at its connection limit answers a new
//! connection with `503` at once instead of letting it hang, and connections that send no
//! headers (idle or slow) are closed after the header timeout, which frees their slots for the
//! researcher's own requests.

use std::io::{Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::sync::Arc;
use std::time::Duration;

use heartwood_gateway::ProjectContext;
use heartwood_web::{AppState, Capability, IngressPolicy, Limits, Mode};

const SECRET: &str = "limits-test-capability";

async fn serve(limits: Limits) -> (tempfile::TempDir, SocketAddr) {
    let project = tempfile::tempdir().expect("project");
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
        .await
        .expect("bind");
    let addr = listener.local_addr().expect("addr");
    let context = ProjectContext::at(project.path()).expect("a UTF-8 project path");
    let state = Arc::new(AppState::new(
        context,
        IngressPolicy::new(Mode::Loopback, addr.port(), Capability::from_secret(SECRET)),
    ));
    tokio::spawn(heartwood_web::listener::serve(listener, state, limits));
    (project, addr)
}

/// A well-formed request with the capability; returns the status line's code, or 0 when the
/// connection gave no answer within 10 s.
fn status_of_request(addr: SocketAddr) -> u16 {
    let mut stream = TcpStream::connect(addr).expect("connect");
    stream
        .set_read_timeout(Some(Duration::from_secs(10)))
        .expect("timeout");
    let request = format!(
        "GET /api/sessions HTTP/1.1\r\nHost: 127.0.0.1:{}\r\nAuthorization: Bearer {SECRET}\r\n\
         Connection: close\r\n\r\n",
        addr.port()
    );
    stream.write_all(request.as_bytes()).expect("write");
    let mut response = Vec::new();
    let _ = stream.read_to_end(&mut response);
    String::from_utf8_lossy(&response)
        .split_whitespace()
        .nth(1)
        .and_then(|s| s.parse().ok())
        .unwrap_or(0)
}

/// Whether the server closed `stream` (end of file) within `wait`.
fn closed_within(stream: &mut TcpStream, wait: Duration) -> bool {
    stream.set_read_timeout(Some(wait)).expect("timeout");
    let mut buf = [0u8; 512];
    loop {
        match stream.read(&mut buf) {
            Ok(0) => return true,
            // A `408` or similar before closing is fine; keep reading to the end.
            Ok(_) => continue,
            Err(e) if e.kind() == std::io::ErrorKind::ConnectionReset => return true,
            Err(_) => return false,
        }
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn a_full_server_refuses_new_connections_politely_and_idle_ones_are_closed() {
    // The header timeout is the window in which the full server must be seen refusing: long
    // enough that a loaded machine's scheduler cannot close it before the test looks.
    let limits = Limits {
        max_connections: 4,
        header_read_timeout: Duration::from_secs(3),
    };
    let (_project, addr) = serve(limits).await;
    tokio::task::spawn_blocking(move || {
        assert_eq!(status_of_request(addr), 200, "served while not full");

        // Three idle connections (no byte sent) and a slow-header one fill the server.
        let mut idle: Vec<TcpStream> = (0..3)
            .map(|_| TcpStream::connect(addr).expect("connect"))
            .collect();
        let mut slow = TcpStream::connect(addr).expect("connect");
        slow.write_all(b"GET /api/sessions HTTP/1.1\r\nHost: 127.0.0.1")
            .expect("partial headers");
        // Once the server has taken the four (how soon depends on a busy machine's
        // scheduler), a connection over the limit is refused at once.
        let started = std::time::Instant::now();
        loop {
            match status_of_request(addr) {
                503 => break,
                200 if started.elapsed() < Duration::from_secs(3) => {
                    std::thread::sleep(Duration::from_millis(20));
                }
                other => panic!("a connection over the limit got {other}, not 503"),
            }
        }

        // The header timeout closes every one of them, and the server serves again.
        for stream in idle.iter_mut().chain(std::iter::once(&mut slow)) {
            assert!(
                closed_within(stream, Duration::from_secs(10)),
                "a connection without headers was kept open"
            );
        }
        assert_eq!(status_of_request(addr), 200, "slots are freed");
    })
    .await
    .expect("client");
}

//! The command channel of a served session: one writer, many interfaces.
//!
//! The process that holds a session's writer lease also listens on a Unix domain socket in the
//! session's directory (`channel.sock`, mode 0600; in the user's private socket directory when
//! that path is too long; each end checks the other is the same user). Another
//! Heartwood process that finds the session owned sends its typed commands there instead of
//! being refused, and reads snapshots and updates from there; the writer stays single, and
//! commands from every interface meet in one order under the session's lock, with the same
//! receipts (a retried command id is answered from its receipt, a stale revision is refused).
//!
//! A client's first line is the channel's capability ([`capability`]), which only processes
//! that can read the user's private directory have. The protocol is one JSON request per line and one JSON answer per line (a subscription
//! answers with a stream of updates). The OS lock stays the truth about ownership: a socket
//! left by a crashed owner refuses connections, and the next owner replaces it.

use std::io::{BufRead, BufReader, Write};
use std::os::unix::fs::PermissionsExt;
use std::os::unix::net::{UnixListener, UnixStream};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Weak};
use std::time::Duration;

use heartwood_events::{Command, Receipt, SessionId, Snapshot, Update};
use serde::{Deserialize, Serialize};
use tokio::sync::broadcast;

mod capability;

use capability::{Capability, Hello};

use crate::error::ChannelError;
use crate::{ErrorKind, GatewayError};

/// The longest socket path the OS accepts (`sun_path`, less its terminating NUL). A session
/// directory deeper than this serves its channel from the user's private socket directory
/// instead (see [`Address`]).
const MAX_SOCKET_PATH: usize = 107;

/// Where a session's channel listens: a socket file, always, never an abstract name (which any
/// local user could bind first). The file is `channel.sock` in the session's directory when
/// that path fits a socket address, else a file named after a digest of that path in the
/// user's private socket directory ([`private_dir`]). Both ends check the other is this user.
struct Address(PathBuf);

impl Address {
    fn of(path: &Path) -> std::io::Result<Address> {
        if path.as_os_str().len() <= MAX_SOCKET_PATH {
            return Ok(Address(path.to_owned()));
        }
        Ok(Address(private_file(path, "sock")?))
    }

    fn bind(&self) -> std::io::Result<UnixListener> {
        // This process holds the lease: a socket there was left by an owner that ended.
        let _ = std::fs::remove_file(&self.0);
        let listener = UnixListener::bind(&self.0)?;
        std::fs::set_permissions(&self.0, std::fs::Permissions::from_mode(0o600))?;
        Ok(listener)
    }

    /// Connects, and refuses a server that is not this user, or not the process `holder`
    /// (the lease holder, when the lease names one): a socket someone else bound can neither
    /// receive this user's decisions nor serve them forged sessions.
    fn connect(&self, holder: Option<u32>) -> std::io::Result<UnixStream> {
        let stream = UnixStream::connect(&self.0)?;
        let refuse = |who: &str| {
            std::io::Error::new(
                std::io::ErrorKind::PermissionDenied,
                format!(
                    "the process serving {} {who}; not talking to it",
                    self.0.display()
                ),
            )
        };
        let peer = rustix::net::sockopt::socket_peercred(&stream)?;
        if peer.uid != rustix::process::getuid() {
            return Err(refuse("runs as another user"));
        }
        let serving = u32::try_from(peer.pid.as_raw_nonzero().get()).ok();
        if holder.is_some_and(|pid| serving != Some(pid)) {
            return Err(refuse("is not the session's lease holder"));
        }
        Ok(stream)
    }

    fn remove(&self) {
        let _ = std::fs::remove_file(&self.0);
    }
}

/// A file in the user's private directory named after a digest of `path`, with `extension`.
fn private_file(path: &Path, extension: &str) -> std::io::Result<PathBuf> {
    let digest = heartwood_audit::Digest::of(path.as_os_str().as_encoded_bytes()).to_hex();
    Ok(private_dir()?.join(format!("{}.{extension}", &digest[..32])))
}

/// The user's private directory for channel sockets: `$XDG_RUNTIME_DIR/heartwood`, else
/// `/tmp/heartwood-<uid>`; made 0700 and used only when it is a real directory (not a link)
/// owned by this user with no access for anyone else.
fn private_dir() -> std::io::Result<PathBuf> {
    use std::os::unix::fs::{DirBuilderExt, MetadataExt};
    let uid = rustix::process::getuid().as_raw();
    let dir = match std::env::var_os("XDG_RUNTIME_DIR").filter(|d| !d.is_empty()) {
        Some(runtime) => PathBuf::from(runtime).join("heartwood"),
        None => std::env::temp_dir().join(format!("heartwood-{uid}")),
    };
    match std::fs::DirBuilder::new().mode(0o700).create(&dir) {
        Ok(()) => {}
        Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => {}
        Err(e) => return Err(e),
    }
    let meta = std::fs::symlink_metadata(&dir)?;
    if !meta.is_dir() || meta.uid() != uid || meta.mode() & 0o077 != 0 {
        return Err(std::io::Error::new(
            std::io::ErrorKind::PermissionDenied,
            format!(
                "{} is not a private directory of this user (owner {}, mode {:o}); remove it \
                 so Heartwood can make its own",
                dir.display(),
                meta.uid(),
                meta.mode() & 0o7777
            ),
        ));
    }
    Ok(dir)
}

/// How long a client waits for an answer before it gives up.
const ANSWER_TIMEOUT: Duration = Duration::from_secs(60);

/// One request.
#[derive(Debug, Serialize, Deserialize)]
#[serde(tag = "op", rename_all = "snake_case")]
enum Request {
    Submit { command: Command },
    Snapshot { since: u64 },
    Subscribe {},
}

/// One answer.
#[derive(Debug, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
enum Answer<T> {
    Ok(T),
    Error { kind: ErrorKind, message: String },
}

/// A session's channel, served while this process holds its lease; dropping it stops serving
/// and removes the socket.
pub(crate) struct ChannelServer {
    address: Address,
    stop: Arc<AtomicBool>,
    _capability: Arc<Capability>,
}

impl Drop for ChannelServer {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::SeqCst);
        // Wakes the accepting thread, which sees the stop and ends.
        let _ = UnixStream::connect(&self.address.0);
        self.address.remove();
    }
}

/// What the channel's peers ask of the process that serves the session: the gateway's own
/// methods, behind a trait so this transport does not depend on the gateway that uses it.
pub(crate) trait Served: Send + Sync + 'static {
    /// [`crate::SessionGateway::submit`].
    fn submit(self: Arc<Self>, command: Command) -> Result<Receipt, GatewayError>;
    /// [`crate::SessionGateway::snapshot`].
    fn snapshot(self: Arc<Self>, session: &SessionId, since: u64)
    -> Result<Snapshot, GatewayError>;
    /// The live updates of `session` while this process serves it (never a relayed feed, so
    /// two processes cannot echo each other).
    fn served_updates(&self, session: &SessionId) -> Option<broadcast::Receiver<Update>>;
    /// The shared store announced a commit to `session`'s journal (by any replica), or, for
    /// `None`, may have announced commits nobody heard (its connection was down): whoever
    /// follows those sessions here looks again now instead of at its next poll.
    fn journal_moved(&self, session: Option<&SessionId>);
}

/// Serves `session`'s channel at `path` (or the private address derived from it) for the
/// gateway behind `shared`. `None` when it cannot be bound (other processes are then told the
/// session is owned, as before).
pub(crate) fn serve(
    path: &Path,
    shared: Weak<dyn Served>,
    session: SessionId,
) -> Option<ChannelServer> {
    let address = Address::of(path).ok()?;
    let capability = Arc::new(Capability::issue(&address.0).ok()?);
    let listener = address.bind().ok()?;
    let admitting = Arc::clone(&capability);
    let stop = Arc::new(AtomicBool::new(false));
    let stopped = Arc::clone(&stop);
    std::thread::Builder::new()
        .name(format!("heartwood-channel-{session}"))
        .spawn(move || {
            for stream in listener.incoming() {
                if stopped.load(Ordering::SeqCst) {
                    break;
                }
                let Ok(stream) = stream else { continue };
                if !same_user(&stream) {
                    continue;
                }
                let shared = shared.clone();
                let session = session.clone();
                let admitting = Arc::clone(&admitting);
                let _ = std::thread::Builder::new()
                    .name("heartwood-channel-peer".into())
                    .spawn(move || answer(stream, &admitting, &shared, &session));
            }
        })
        .ok()?;
    Some(ChannelServer {
        address,
        stop,
        _capability: capability,
    })
}

/// Whether the peer runs as this process's user.
fn same_user(stream: &UnixStream) -> bool {
    rustix::net::sockopt::socket_peercred(stream)
        .is_ok_and(|peer| peer.uid == rustix::process::getuid())
}

/// Answers one peer's requests until it hangs up; a peer whose first line is not the
/// channel's capability is answered nothing.
fn answer(
    stream: UnixStream,
    capability: &Capability,
    shared: &Weak<dyn Served>,
    session: &SessionId,
) {
    let Ok(reading) = stream.try_clone() else {
        return;
    };
    let mut writer = stream;
    let mut lines = BufReader::new(reading).lines();
    let admitted = lines
        .next()
        .and_then(Result::ok)
        .and_then(|line| serde_json::from_str::<Hello>(&line).ok())
        .is_some_and(|hello| capability.admits(&hello.capability));
    if !admitted {
        return;
    }
    for line in lines {
        let Ok(line) = line else { return };
        let Some(gateway) = shared.upgrade() else {
            return;
        };
        let written = match serde_json::from_str::<Request>(&line) {
            Err(e) => send::<()>(&mut writer, Err(ChannelError::Malformed(e).into())),
            Ok(Request::Submit { command }) if &command.session != session => send::<()>(
                &mut writer,
                Err(ChannelError::OtherSession {
                    serves: session.clone(),
                    asked: command.session,
                }
                .into()),
            ),
            Ok(Request::Submit { command }) => {
                send(&mut writer, Arc::clone(&gateway).submit(command))
            }
            Ok(Request::Snapshot { since }) => {
                send(&mut writer, Arc::clone(&gateway).snapshot(session, since))
            }
            Ok(Request::Subscribe {}) => {
                let subscribed = gateway.served_updates(session);
                drop(gateway);
                match subscribed {
                    Some(updates) => stream_updates(&mut writer, updates),
                    None => {
                        let _ = send::<()>(&mut writer, Err(GatewayError::Closed(session.clone())));
                    }
                }
                return;
            }
        };
        if written.is_err() {
            return;
        }
    }
}

fn send<T: Serialize>(
    writer: &mut UnixStream,
    result: Result<T, GatewayError>,
) -> std::io::Result<()> {
    let answer = match result {
        Ok(value) => Answer::Ok(value),
        Err(e) => Answer::Error {
            kind: e.kind(),
            message: e.to_string(),
        },
    };
    let mut line = serde_json::to_vec(&answer).map_err(std::io::Error::other)?;
    line.push(b'\n');
    writer.write_all(&line)
}

/// Sends updates to a subscribed peer until it hangs up or the session stops being served.
fn stream_updates(writer: &mut UnixStream, mut updates: broadcast::Receiver<Update>) {
    loop {
        let update = match updates.blocking_recv() {
            Ok(update) => update,
            Err(broadcast::error::RecvError::Lagged(_)) => Update::lagged(0),
            Err(broadcast::error::RecvError::Closed) => return,
        };
        if send(writer, Ok(update)).is_err() {
            return;
        }
    }
}

/// A connection to the process that serves a session.
pub(crate) struct Client {
    stream: UnixStream,
    reader: BufReader<UnixStream>,
}

impl Client {
    /// Connects to the channel at `path`, served by this user's process `holder` (when
    /// known); `None` when nobody serves it (no socket, or one left by an owner that ended) or
    /// someone else does.
    pub(crate) fn connect(path: &Path, holder: Option<u32>) -> Option<Client> {
        let address = Address::of(path).ok()?;
        let mut stream = address.connect(holder).ok()?;
        let hello = Hello {
            capability: Capability::read(&address.0).ok()?,
        };
        let mut line = serde_json::to_vec(&hello).ok()?;
        line.push(b'\n');
        stream.write_all(&line).ok()?;
        stream.set_read_timeout(Some(ANSWER_TIMEOUT)).ok()?;
        let reader = BufReader::new(stream.try_clone().ok()?);
        Some(Client { stream, reader })
    }

    fn call<T: for<'de> Deserialize<'de>>(&mut self, request: &Request) -> Result<T, GatewayError> {
        let mut line = serde_json::to_vec(request).map_err(ChannelError::Encode)?;
        line.push(b'\n');
        self.stream.write_all(&line).map_err(lost)?;
        self.next()
    }

    fn next<T: for<'de> Deserialize<'de>>(&mut self) -> Result<T, GatewayError> {
        let mut answer = String::new();
        if self.reader.read_line(&mut answer).map_err(lost)? == 0 {
            return Err(lost(std::io::ErrorKind::UnexpectedEof.into()));
        }
        match serde_json::from_str::<Answer<T>>(&answer) {
            Ok(Answer::Ok(value)) => Ok(value),
            Ok(Answer::Error { kind, message }) => Err(GatewayError::Forwarded { kind, message }),
            Err(e) => Err(ChannelError::Unreadable(e).into()),
        }
    }

    /// Submits a command to the serving process.
    pub(crate) fn submit(mut self, command: Command) -> Result<Receipt, GatewayError> {
        self.call(&Request::Submit { command })
    }

    /// The session's snapshot as the serving process has it (live, with any review, output
    /// and streamed text).
    pub(crate) fn snapshot(mut self, since: u64) -> Result<Snapshot, GatewayError> {
        self.call(&Request::Snapshot { since })
    }

    /// The session's updates from the serving process, relayed by a thread of their own.
    pub(crate) fn subscribe(mut self) -> Result<broadcast::Receiver<Update>, GatewayError> {
        let request = serde_json::to_vec(&Request::Subscribe {}).map_err(ChannelError::Encode)?;
        self.stream
            .write_all(&[request.as_slice(), b"\n"].concat())
            .map_err(lost)?;
        // Updates may be far apart: no read timeout on a subscription.
        self.stream.set_read_timeout(None).map_err(lost)?;
        let (sender, receiver) = broadcast::channel(crate::UPDATE_QUEUE);
        std::thread::Builder::new()
            .name("heartwood-channel-updates".into())
            .spawn(move || {
                while let Ok(update) = self.next::<Update>() {
                    if sender.send(update).is_err() {
                        return;
                    }
                }
            })
            .map_err(ChannelError::Follow)?;
        Ok(receiver)
    }
}

fn lost(e: std::io::Error) -> GatewayError {
    ChannelError::Lost(e).into()
}

#[cfg(test)]
mod tests {
    use std::os::unix::fs::MetadataExt;

    use super::*;

    /// A stand-in for the gateway: every request is answered "closed", which is enough to
    /// see whether a peer is answered at all.
    struct Nothing;

    impl Served for Nothing {
        fn submit(self: Arc<Self>, command: Command) -> Result<Receipt, GatewayError> {
            Err(GatewayError::Closed(command.session))
        }
        fn snapshot(
            self: Arc<Self>,
            session: &SessionId,
            _: u64,
        ) -> Result<Snapshot, GatewayError> {
            Err(GatewayError::Closed(session.clone()))
        }
        fn served_updates(&self, _: &SessionId) -> Option<broadcast::Receiver<Update>> {
            None
        }
        fn journal_moved(&self, _: Option<&SessionId>) {}
    }

    /// A process of the same user that reaches the socket but cannot read the capability (a
    /// confined command, say) is answered nothing; Heartwood's own client is answered.
    #[test]
    fn a_peer_without_the_capability_is_answered_nothing() {
        let dir = tempfile::tempdir().expect("dir");
        let socket = dir.path().join("channel.sock");
        let served: Arc<dyn Served> = Arc::new(Nothing);
        let session = SessionId::parse("s-cap").expect("id");
        let server = serve(&socket, Arc::downgrade(&served), session).expect("served");
        let mut raw = UnixStream::connect(&socket).expect("connect");
        raw.set_read_timeout(Some(Duration::from_secs(5)))
            .expect("timeout");
        raw.write_all(b"{\"capability\":\"guessed\"}\n{\"op\":\"snapshot\",\"since\":0}\n")
            .expect("write");
        let mut answer = String::new();
        let read = BufReader::new(&raw).read_line(&mut answer).unwrap_or(0);
        assert_eq!(read, 0, "answered without the capability: {answer}");
        let client = Client::connect(&socket, None).expect("Heartwood's client connects");
        let refused = client.snapshot(0).expect_err("the stand-in answers closed");
        assert!(
            matches!(refused, GatewayError::Forwarded { .. }),
            "the request was answered: {refused}"
        );
        let file = std::fs::read_dir(private_dir().expect("dir"))
            .expect("list")
            .flatten()
            .find(|e| e.file_name().to_string_lossy().ends_with(".capability"))
            .expect("the capability is kept in the private directory");
        assert_eq!(file.metadata().expect("meta").mode() & 0o777, 0o600);
        drop(server);
    }

    #[test]
    fn a_long_session_path_is_served_from_the_users_private_directory() {
        let long = PathBuf::from("/")
            .join("d".repeat(120))
            .join("channel.sock");
        let address = Address::of(&long).expect("a private directory");
        let dir = address.0.parent().expect("a directory");
        assert!(
            address.0.as_os_str().len() <= MAX_SOCKET_PATH,
            "{address:?}",
            address = address.0
        );
        let meta = std::fs::symlink_metadata(dir).expect("made");
        assert_eq!(meta.uid(), rustix::process::getuid().as_raw());
        assert_eq!(meta.mode() & 0o777, 0o700);
        let short = Path::new("/tmp/s/channel.sock");
        assert_eq!(Address::of(short).expect("file").0, short);
    }

    /// A socket another local user bound where the client looks is refused; the same socket
    /// bound by this user is not (so the refusal is the peer check, not a failed connect).
    #[test]
    fn a_channel_served_by_another_user_is_refused() {
        let root = rustix::process::getuid().is_root();
        let setpriv =
            Path::new("/usr/bin/setpriv").exists() && Path::new("/usr/bin/python3").exists();
        if !root || !setpriv {
            eprintln!(
                "SKIPPED: needs root, setpriv and /usr/bin/python3 to serve a socket as \
                 another user (root: {root}, tools: {setpriv})"
            );
            return;
        }
        let dir = tempfile::tempdir().expect("dir");
        std::fs::set_permissions(dir.path(), std::fs::Permissions::from_mode(0o777))
            .expect("chmod");
        let serve_as = |uid: Option<u32>, name: &str| {
            let path = dir.path().join(name);
            let script = format!(
                "import socket,time\ns=socket.socket(socket.AF_UNIX)\ns.bind({:?})\ns.listen()\n\
                 time.sleep(20)",
                path.display().to_string()
            );
            let mut command = match uid {
                Some(uid) => {
                    let mut c = std::process::Command::new("/usr/bin/setpriv");
                    c.args([
                        format!("--reuid={uid}"),
                        format!("--regid={uid}"),
                        "--clear-groups".to_owned(),
                        "/usr/bin/python3".to_owned(),
                    ]);
                    c
                }
                None => std::process::Command::new("/usr/bin/python3"),
            };
            let child = command.args(["-c", &script]).spawn().expect("python3");
            for _ in 0..200 {
                if path.exists() {
                    break;
                }
                std::thread::sleep(Duration::from_millis(25));
            }
            (path, child)
        };
        let (theirs, mut other) = serve_as(Some(65534), "theirs.sock");
        let (ours, mut own) = serve_as(None, "ours.sock");
        let refused = Address(theirs).connect(None);
        let impostor = Address(ours.clone()).connect(Some(std::process::id()));
        let accepted = Address(ours).connect(Some(own.id()));
        let _ = other.kill();
        let _ = own.kill();
        let refused = refused.expect_err("another user's server was accepted");
        assert_eq!(
            refused.kind(),
            std::io::ErrorKind::PermissionDenied,
            "{refused}"
        );
        let impostor = impostor.expect_err("a server that is not the lease holder was accepted");
        assert_eq!(
            impostor.kind(),
            std::io::ErrorKind::PermissionDenied,
            "{impostor}"
        );
        accepted.expect("this user's own server, the lease holder, is accepted");
    }
}

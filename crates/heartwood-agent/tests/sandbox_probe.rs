//! The sandbox against the classes a hostile probe found when the view was the host minus a
//! list: credentials the list did not name, hidden folders that are links, the passwd home,
//! other projects' journals, host sockets, SysV IPC, the kernel keyring, tracing, an inherited
//! writable descriptor and the network at project-write. Each probe runs confined and, as its
//! control, unsandboxed, where it must succeed: so none of them passes by running nothing.

mod support;

use std::io::Write;
use std::os::unix::net::UnixListener;
use std::path::{Path, PathBuf};

use heartwood_agent::tools::sandbox::Sandbox;
use heartwood_agent::tools::{SandboxLevel, Terminal, TerminalLimits};
use support::run;

fn put(path: &Path, text: &str) {
    std::fs::create_dir_all(path.parent().expect("parent")).expect("mkdir");
    std::fs::write(path, text).expect("write");
}

/// A home with the secrets the probe read (none of them on the old list's names, or reached
/// through a link), another project with a journal, and this project inside it.
struct Home {
    _dir: tempfile::TempDir,
    home: PathBuf,
    project: PathBuf,
}

const SECRETS: [(&str, &str); 9] = [
    (".config/git/credentials", "GIT-CREDENTIAL-SECRET"),
    (".pgpass", "PGPASS-SECRET"),
    (".kaggle/kaggle.json", "KAGGLE-SECRET"),
    (".vault-token", "VAULT-SECRET"),
    (".config/rclone/rclone.conf", "RCLONE-SECRET"),
    (".terraform.d/credentials.tfrc.json", "TERRAFORM-SECRET"),
    (".config/gh/hosts.yml", "GH-SECRET"),
    (".codex/auth.json", "OTHER-AGENT-SECRET"),
    ("dotfiles/ssh/id_ed25519", "SSH-KEY-SECRET"),
];

fn home() -> Home {
    let dir = tempfile::tempdir().expect("home");
    let home = dir.path().canonicalize().expect("real");
    for (path, secret) in SECRETS {
        put(&home.join(path), secret);
    }
    // A dotfile manager's layout: the hidden folder is a link.
    std::os::unix::fs::symlink(home.join("dotfiles/ssh"), home.join(".ssh")).expect("link");
    put(
        &home.join("projects/other/.heartwood/sessions/s/events.jsonl"),
        "OTHER-PROJECT-JOURNAL",
    );
    let project = home.join("projects/study");
    put(&project.join("data.csv"), "x,y\n1,2\n");
    Home {
        _dir: dir,
        home,
        project,
    }
}

fn terminal(h: &Home) -> Terminal {
    let sandbox = Sandbox::new(&h.project).with_home(Some(h.home.clone()));
    Terminal::new(&h.project, TerminalLimits::default()).with_sandbox(sandbox)
}

const CONFINED: [SandboxLevel; 2] = [SandboxLevel::ReadOnly, SandboxLevel::ProjectWrite];

#[tokio::test]
async fn nothing_outside_the_allow_list_is_there_to_read() {
    if !heartwood_sandbox::required_by_test() {
        return;
    }
    let h = home();
    let mut term = terminal(&h);
    let reads: Vec<String> = SECRETS
        .iter()
        .map(|(path, _)| format!("cat {}", h.home.join(path).display()))
        .chain([
            format!("cat {}/.ssh/id_ed25519", h.home.display()),
            format!(
                "cat {}/projects/other/.heartwood/sessions/s/events.jsonl",
                h.home.display()
            ),
            // The passwd home (root's here), which a shell without HOME would find.
            "ls -A /root".to_owned(),
            "ls /run /var /mnt /srv /media".to_owned(),
        ])
        .collect();
    let all = reads.join("; ");
    let control = run(&mut term, &all, SandboxLevel::Unsandboxed).await;
    for (_, secret) in SECRETS {
        assert!(
            control.contains(secret),
            "control: {secret} readable: {control}"
        );
    }
    assert!(control.contains("OTHER-PROJECT-JOURNAL"), "{control}");
    for level in CONFINED {
        let said = run(&mut term, &format!("{all}; echo probe-ran"), level).await;
        assert!(said.contains("probe-ran"), "{level:?}: {said}");
        for (_, secret) in SECRETS {
            assert!(!said.contains(secret), "{level:?}: {secret}: {said}");
        }
        assert!(!said.contains("OTHER-PROJECT-JOURNAL"), "{level:?}: {said}");
        assert!(
            !said.contains(".cargo") && !said.contains(".bashrc"),
            "{level:?}: {said}"
        );
        // The project itself is there.
        let data = run(&mut term, "cat data.csv", level).await;
        assert!(data.contains("1,2"), "{level:?}: {data}");
    }
    term.stop().await;
}

#[tokio::test]
async fn host_sockets_and_the_network_cannot_be_reached() {
    if !heartwood_sandbox::required_by_test() {
        return;
    }
    let h = home();
    let bus = h.home.join("run/bus.sock");
    std::fs::create_dir_all(bus.parent().expect("parent")).expect("mkdir");
    let listener = UnixListener::bind(&bus).expect("bind");
    listener.set_nonblocking(true).expect("nonblocking");
    let tcp = std::net::TcpListener::bind("127.0.0.1:0").expect("tcp");
    let port = tcp.local_addr().expect("addr").port();
    let probe = format!(
        "python3 -c \"import socket; s=socket.socket(socket.AF_UNIX); s.connect('{}'); print('UNIX-CONNECTED')\" 2>&1; \
         bash -c 'echo > /dev/tcp/127.0.0.1/{port} && echo TCP-CONNECTED' 2>&1; echo probe-ran",
        bus.display()
    );
    let mut term = terminal(&h);
    let control = run(&mut term, &probe, SandboxLevel::Unsandboxed).await;
    assert!(
        control.contains("UNIX-CONNECTED") && control.contains("TCP-CONNECTED"),
        "{control}"
    );
    for level in CONFINED {
        let said = run(&mut term, &probe, level).await;
        assert!(said.contains("probe-ran"), "{level:?}: {said}");
        assert!(!said.contains("UNIX-CONNECTED"), "{level:?}: {said}");
        assert!(!said.contains("TCP-CONNECTED"), "{level:?}: {said}");
    }
    term.stop().await;
}

/// The system call numbers the probe uses, for this machine.
fn keyctl_number() -> u32 {
    if cfg!(target_arch = "aarch64") {
        219
    } else {
        250
    }
}

#[tokio::test]
async fn the_keyring_tracing_and_namespaces_are_refused_by_the_filter() {
    if !heartwood_sandbox::required_by_test() {
        return;
    }
    let h = home();
    let script = format!(
        "import ctypes, os\n\
         libc = ctypes.CDLL(None, use_errno=True)\n\
         def show(name, r):\n    print(name, 'OK' if r >= 0 else 'REFUSED-%d' % ctypes.get_errno())\n\
         show('keyctl', libc.syscall({}, 0, -3, 1))\n\
         show('ptrace', libc.ptrace(0, 0, 0, 0))\n\
         show('unshare', libc.unshare(0x10000000))\n\
         show('vsock', libc.socket(40, 1, 0))\n\
         print('probe-ran')\n",
        keyctl_number()
    );
    put(&h.project.join("probe.py"), &script);
    let mut term = terminal(&h);
    let control = run(&mut term, "python3 probe.py", SandboxLevel::Unsandboxed).await;
    assert!(
        control.contains("keyctl OK") && control.contains("ptrace OK"),
        "{control}"
    );
    for level in CONFINED {
        let said = run(&mut term, "python3 probe.py", level).await;
        assert!(said.contains("probe-ran"), "{level:?}: {said}");
        for call in ["keyctl", "ptrace", "unshare", "vsock"] {
            assert!(
                said.contains(&format!("{call} REFUSED-1")),
                "{level:?}: {call}: {said}"
            );
        }
    }
    term.stop().await;
}

#[tokio::test]
async fn a_sysv_segment_does_not_outlive_the_sandbox() {
    if !heartwood_sandbox::required_by_test() {
        return;
    }
    let h = home();
    // A key of this test's own, so parallel runs do not meet.
    let key = 0x4857_0000_u32 | (std::process::id() & 0xffff);
    let script = format!(
        "import ctypes\nlibc = ctypes.CDLL(None)\nprint('segment', libc.shmget({key}, 4096, 0o1600))\n"
    );
    put(&h.project.join("ipc.py"), &script);
    let listed = || {
        std::fs::read_to_string("/proc/sysvipc/shm")
            .expect("shm list")
            .lines()
            .skip(1)
            .any(|l| l.split_whitespace().next() == Some(&key.cast_signed().to_string()))
    };
    let mut term = terminal(&h);
    for level in CONFINED {
        let said = run(&mut term, "python3 ipc.py", level).await;
        assert!(said.contains("segment "), "{level:?}: {said}");
        assert!(
            !said.contains("segment -1"),
            "{level:?}: the segment was made: {said}"
        );
        assert!(!listed(), "{level:?}: the host sees the sandbox's segment");
    }
    term.stop().await;
    // The control: unsandboxed, the host sees it (then it is removed).
    let mut plain = terminal(&h);
    run(&mut plain, "python3 ipc.py", SandboxLevel::Unsandboxed).await;
    let seen = listed();
    run(
        &mut plain,
        &format!("ipcrm -M {key}"),
        SandboxLevel::Unsandboxed,
    )
    .await;
    plain.stop().await;
    assert!(seen, "control: an unconfined segment is the host's");
}

#[tokio::test]
async fn a_descriptor_heartwood_inherited_is_closed_inside() {
    if !heartwood_sandbox::required_by_test() {
        return;
    }
    let h = home();
    let outside = tempfile::tempdir().expect("outside");
    let target = outside.path().join("inherited.log");
    // Opened without close-on-exec, as a parent process may have left one.
    let fd = rustix::fs::open(
        &target,
        rustix::fs::OFlags::WRONLY | rustix::fs::OFlags::CREATE | rustix::fs::OFlags::APPEND,
        rustix::fs::Mode::from_raw_mode(0o600),
    )
    .expect("open");
    let n = std::os::fd::AsRawFd::as_raw_fd(&fd);
    let write = format!("echo INHERITED-WRITE >&{n}; echo probe-ran");
    for level in CONFINED {
        let mut term = terminal(&h);
        let said = run(&mut term, &write, level).await;
        term.stop().await;
        assert!(said.contains("probe-ran"), "{level:?}: {said}");
    }
    let confined_wrote = std::fs::read_to_string(&target).unwrap_or_default();
    let mut term = terminal(&h);
    run(&mut term, &write, SandboxLevel::Unsandboxed).await;
    term.stop().await;
    drop(fd);
    let all = std::fs::read_to_string(&target).expect("read");
    assert!(
        all.contains("INHERITED-WRITE"),
        "control: the descriptor was writable"
    );
    assert!(
        !confined_wrote.contains("INHERITED-WRITE"),
        "a confined shell wrote through it"
    );
    let _ = std::io::stderr().flush();
}

/// A one-request HTTP server on the host's loopback, answering `body` to every request.
fn http_server(body: &'static str) -> u16 {
    let listener = std::net::TcpListener::bind("127.0.0.1:0").expect("bind");
    let port = listener.local_addr().expect("addr").port();
    std::thread::spawn(move || {
        for stream in listener.incoming().flatten() {
            let mut stream = stream;
            let mut buf = [0u8; 4096];
            let _ = std::io::Read::read(&mut stream, &mut buf);
            let _ = write!(
                stream,
                "HTTP/1.1 200 OK\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{body}",
                body.len()
            );
        }
    });
    port
}

/// Network off by default at every level; a host the project names is reached only through
/// Heartwood's proxy, every connection (allowed or refused) is reported with the command's
/// result, and a host it does not name is refused.
#[tokio::test]
async fn named_hosts_are_reached_through_the_proxy_and_nothing_else() {
    if !heartwood_sandbox::required_by_test() {
        return;
    }
    let h = home();
    let port = http_server("FROM-THE-HOST");
    let fetch = |host: &str| {
        format!(
            "python3 -c \"import urllib.request as u; print(u.urlopen('http://{host}:{port}/', timeout=10).read().decode())\" 2>&1 | tail -1; echo probe-ran"
        )
    };
    let env =
        heartwood_agent::tools::ToolEnvironment::default().reaching_hosts(["127.0.0.1".to_owned()]);
    let sandbox = Sandbox::new(&h.project).with_home(Some(h.home.clone()));
    let mut term = Terminal::with_environment(&h.project, TerminalLimits::default(), env)
        .with_sandbox(sandbox);
    for level in CONFINED {
        let allowed = run(&mut term, &fetch("127.0.0.1"), level).await;
        assert!(allowed.contains("FROM-THE-HOST"), "{level:?}: {allowed}");
        assert!(
            allowed.contains(&format!("[network: 127.0.0.1:{port} (")),
            "{level:?}: the connection is reported: {allowed}"
        );
        let other = run(&mut term, &fetch("localhost"), level).await;
        assert!(
            other.contains("probe-ran") && !other.contains("FROM-THE-HOST"),
            "{level:?}: {other}"
        );
        assert!(
            other.contains(&format!("[network: localhost:{port} refused")),
            "{level:?}: {other}"
        );
        let direct = run(
            &mut term,
            &format!("bash -c 'echo > /dev/tcp/127.0.0.1/{port} && echo DIRECT-CONNECTED' 2>&1; echo probe-ran"),
            level,
        )
        .await;
        assert!(
            direct.contains("probe-ran") && !direct.contains("DIRECT-CONNECTED"),
            "{level:?}: {direct}"
        );
    }
    term.stop().await;
    // Without named hosts nothing is reached, not even through a proxy variable.
    let mut closed = terminal(&h);
    let none = run(&mut closed, &fetch("127.0.0.1"), SandboxLevel::ProjectWrite).await;
    assert!(
        none.contains("probe-ran") && !none.contains("FROM-THE-HOST"),
        "{none}"
    );
    closed.stop().await;
}

/// Where Heartwood runs as root, the kernel's settings are still the host's: a "reader" that
/// could write `/proc/sys/kernel/core_pattern` would run a program on the host at the next
/// crash. Writing a setting back unchanged shows whether it can be written at all.
#[tokio::test]
async fn the_kernels_settings_cannot_be_written() {
    if !heartwood_sandbox::required_by_test() {
        return;
    }
    if !rustix::process::getuid().is_root() {
        eprintln!("SKIPPED: only root can write kernel settings, so there is nothing to refuse");
        return;
    }
    let h = home();
    let setting = "/proc/sys/kernel/printk_ratelimit_burst";
    let before = std::fs::read_to_string(setting).expect("setting");
    let probe = format!(
        "cat {setting} > /tmp/v && cat /tmp/v > {setting} && echo SETTING-WRITTEN; echo probe-ran"
    );
    let mut term = terminal(&h);
    let control = run(&mut term, &probe, SandboxLevel::Unsandboxed).await;
    assert!(control.contains("SETTING-WRITTEN"), "control: {control}");
    for level in CONFINED {
        let said = run(&mut term, &probe, level).await;
        assert!(said.contains("probe-ran"), "{level:?}: {said}");
        assert!(!said.contains("SETTING-WRITTEN"), "{level:?}: {said}");
    }
    term.stop().await;
    assert_eq!(std::fs::read_to_string(setting).expect("setting"), before);
}

/// A project nested in this one has its own journal, configuration and channel, and a nested
/// repository its own hooks: none of them is readable or writable from this one's commands.
#[tokio::test]
async fn a_nested_projects_state_and_a_nested_repository_stay_out_of_reach() {
    if !heartwood_sandbox::required_by_test() {
        return;
    }
    let h = home();
    put(
        &h.project.join("inner/.heartwood/sessions/s/events.jsonl"),
        "INNER-JOURNAL",
    );
    put(
        &h.project.join("inner/.heartwood/config.toml"),
        "INNER-CONFIG",
    );
    put(&h.project.join("sub/.git/config"), "[core]\n");
    let mut term = terminal(&h);
    let probe = "cat inner/.heartwood/sessions/s/events.jsonl inner/.heartwood/config.toml; \
                 echo x >> inner/.heartwood/config.toml; mkdir -p sub/.git/hooks && echo hook > sub/.git/hooks/pre-commit; \
                 echo x >> sub/.git/config; echo probe-ran";
    let control = run(&mut term, probe, SandboxLevel::Unsandboxed).await;
    assert!(control.contains("INNER-JOURNAL"), "control: {control}");
    std::fs::write(
        h.project.join("inner/.heartwood/config.toml"),
        "INNER-CONFIG",
    )
    .expect("reset");
    std::fs::write(h.project.join("sub/.git/config"), "[core]\n").expect("reset");
    let _ = std::fs::remove_dir_all(h.project.join("sub/.git/hooks"));
    for level in CONFINED {
        let said = run(&mut term, probe, level).await;
        assert!(said.contains("probe-ran"), "{level:?}: {said}");
        assert!(
            !said.contains("INNER-JOURNAL") && !said.contains("INNER-CONFIG"),
            "{level:?}: {said}"
        );
    }
    term.stop().await;
    assert_eq!(
        std::fs::read_to_string(h.project.join("inner/.heartwood/config.toml")).expect("read"),
        "INNER-CONFIG"
    );
    assert_eq!(
        std::fs::read_to_string(h.project.join("sub/.git/config")).expect("read"),
        "[core]\n"
    );
    assert!(!h.project.join("sub/.git/hooks/pre-commit").exists());
}

/// A project folder that is a shared temporary folder, the root or the home itself cannot be
/// shown alone: confinement there is refused, saying so, rather than showing everything.
#[test]
fn a_folder_too_broad_to_be_a_project_is_refused() {
    if !heartwood_sandbox::required_by_test() {
        return;
    }
    for broad in ["/tmp", "/"] {
        let refused = Sandbox::new(std::path::Path::new(broad))
            .wrap(SandboxLevel::ReadOnly, "true", &[])
            .expect_err("refused");
        assert!(refused.to_string().contains("too broad"), "{refused}");
    }
}

//! The Landlock layer under bubblewrap's view, with real processes: the helper built beside
//! `heartwood` restricts every confined command, so a write the view alone would let through
//! is refused by the kernel (a file created in the view's `/dev`, which bubblewrap makes
//! writable; a writable bind the rules mark read-only), while what commands need still works
//! (`/dev/null`, the sandbox's own `/dev/shm`, a pipe reopened as `/dev/stdout`, listing `/`).
//! Each refusal has a control showing the command ran. The helper also sets the resource
//! limits and leaves the program no inherited descriptor. `heartwood status` says whether the
//! layer is on, and why not when the helper is missing.

mod support;

use std::ffi::OsString;
use std::path::Path;
use std::process::{Command, Output, Stdio};

use heartwood_sandbox::{Sandbox, SandboxLevel, required_by_test, support as sandbox_support};
use serde_json::Value;
use support::{heartwood, text};

const HELPER: &str = env!("CARGO_BIN_EXE_heartwood-confine");

/// Whether this machine confines with the Landlock layer; skips loudly where it cannot, and
/// fails where CI requires it (`required_by_test` requires the layer where the kernel has it).
fn layered() -> bool {
    if !required_by_test() {
        return false;
    }
    let layer = &sandbox_support().landlock;
    if !layer.on() {
        eprintln!("SKIPPED: no Landlock layer here: {}", layer.detail);
    }
    layer.on()
}

fn run(program: &Path, args: &[OsString]) -> Output {
    Command::new(program)
        .args(args)
        .stdin(Stdio::null())
        .output()
        .expect("start")
}

/// bubblewrap's view of the system directories, without Heartwood's filter or limits: enough
/// to show what the view alone allows and what the helper adds.
fn bare_view(extra: &[&str], program: &[&str]) -> Output {
    run(Path::new("/usr/bin/bwrap"), &bare_view_args(extra, program))
}

fn bare_view_args(extra: &[&str], program: &[&str]) -> Vec<OsString> {
    let mut args: Vec<OsString> = [
        "--unshare-all",
        "--die-with-parent",
        "--ro-bind",
        "/usr",
        "/usr",
    ]
    .map(OsString::from)
    .into();
    for name in ["/bin", "/lib", "/lib64"] {
        if let Ok(target) = std::fs::read_link(name) {
            args.extend(["--symlink".into(), target.into_os_string(), name.into()]);
        } else if Path::new(name).is_dir() {
            args.extend(["--ro-bind", name, name].map(OsString::from));
        }
    }
    args.extend(["--dev", "/dev", "--proc", "/proc"].map(OsString::from));
    args.extend(extra.iter().map(OsString::from));
    args.extend(
        [
            "--ro-bind",
            HELPER,
            "/run/heartwood/confine",
            "--remount-ro",
            "/",
            "--",
        ]
        .map(OsString::from),
    );
    args.extend(program.iter().map(OsString::from));
    args
}

const DEV_PROBE: &str = "echo ran; \
    touch /dev/heartwood-probe 2>/dev/null && echo created-in-dev; \
    echo x > /dev/null && echo null-written; \
    echo x > /dev/shm/mine && echo shm-written; \
    echo to-stdout > /dev/stdout; \
    ls / >/dev/null && echo root-listed";

#[test]
fn a_file_created_in_the_views_dev_is_refused_at_every_level() {
    if !layered() {
        return;
    }
    // The view alone: bubblewrap's /dev is a writable tmpfs.
    let alone = bare_view(&[], &["/usr/bin/bash", "-c", DEV_PROBE]);
    assert!(
        text(&alone.stdout).contains("created-in-dev"),
        "the view alone lets a file be made in /dev: {alone:?}"
    );
    let project = tempfile::tempdir().expect("project");
    let sandbox = Sandbox::new(project.path());
    for level in [SandboxLevel::ReadOnly, SandboxLevel::ProjectWrite] {
        let confined = sandbox
            .wrap(level, "bash", &["-c", DEV_PROBE])
            .expect("wrap");
        let out = run(&confined.program, &confined.args);
        let said = text(&out.stdout);
        assert!(said.contains("ran"), "{level:?}: the command ran: {out:?}");
        assert!(!said.contains("created-in-dev"), "{level:?}: {said}");
        for works in ["null-written", "shm-written", "to-stdout", "root-listed"] {
            assert!(said.contains(works), "{level:?}: {works} missing: {out:?}");
        }
    }
}

#[test]
fn a_writable_bind_the_rules_mark_read_only_takes_no_write() {
    if !layered() {
        return;
    }
    let data = tempfile::tempdir().expect("data");
    let dir = data.path().to_str().expect("utf-8 path");
    let write = format!("echo ran; echo x > {dir}/written && echo wrote");
    let bind = ["--bind", dir, dir];
    let through = |grant: &str| {
        bare_view(
            &bind,
            &[
                "/run/heartwood/confine",
                "--read",
                "/usr",
                "--open",
                "/dev",
                grant,
                dir,
                "--",
                "/usr/bin/bash",
                "-c",
                &write,
            ],
        )
    };
    // Control: the view alone, and the helper granting the directory, both write.
    let alone = bare_view(&bind, &["/usr/bin/bash", "-c", &write]);
    assert!(text(&alone.stdout).contains("wrote"), "{alone:?}");
    std::fs::remove_file(data.path().join("written")).expect("remove");
    let granted = through("--write");
    assert!(text(&granted.stdout).contains("wrote"), "{granted:?}");
    std::fs::remove_file(data.path().join("written")).expect("remove");
    // Read-only by the rules: the write is refused, the command ran.
    let refused = through("--read");
    assert!(text(&refused.stdout).contains("ran"), "{refused:?}");
    assert!(!text(&refused.stdout).contains("wrote"), "{refused:?}");
    assert!(
        text(&refused.stderr).contains("Permission denied"),
        "{refused:?}"
    );
    assert!(!data.path().join("written").exists());
}

/// What the shell prelude does where there is no helper, the helper does itself: the
/// resource limits, and no descriptor above 2 of those bubblewrap passed on.
#[test]
fn the_helper_sets_the_limits_and_leaves_no_inherited_descriptor() {
    if !layered() {
        return;
    }
    let outside = tempfile::tempdir().expect("outside");
    let log = outside.path().join("inherited.log");
    // A parent that left descriptor 7 open (no close-on-exec) before starting bubblewrap.
    let inheriting = |program: &Path, args: &[OsString]| {
        let mut all: Vec<OsString> = vec![
            "-c".into(),
            "exec 7>>\"$0\"; exec \"$@\"".into(),
            log.clone().into_os_string(),
            program.into(),
        ];
        all.extend(args.iter().cloned());
        run(Path::new("/usr/bin/bash"), &all)
    };
    let probe = "echo ran; ulimit -v; ulimit -u; ulimit -f; \
        echo INHERITED >&7 && echo wrote-through-7";
    // Control: bubblewrap alone passes the descriptor on.
    let alone = inheriting(
        Path::new("/usr/bin/bwrap"),
        &bare_view_args(&[], &["/usr/bin/bash", "-c", probe]),
    );
    assert!(text(&alone.stdout).contains("wrote-through-7"), "{alone:?}");
    let project = tempfile::tempdir().expect("project");
    let limits = heartwood_sandbox::Limits {
        memory_bytes: 3 << 30,
        processes: 777,
        file_bytes: 5 << 20,
        ..heartwood_sandbox::Limits::default()
    };
    let sandbox = Sandbox::new(project.path()).with_limits(limits);
    for level in [SandboxLevel::ReadOnly, SandboxLevel::ProjectWrite] {
        let confined = sandbox.wrap(level, "bash", &["-c", probe]).expect("wrap");
        let out = inheriting(&confined.program, &confined.args);
        let said = text(&out.stdout);
        // bash says the address space and file size in KiB.
        let lines: Vec<&str> = said.lines().collect();
        assert_eq!(
            lines,
            ["ran", "3145728", "777", "5120"],
            "{level:?}: {out:?}"
        );
    }
    let written = std::fs::read_to_string(&log).expect("log");
    assert_eq!(written, "INHERITED\n", "only the control wrote through it");
}

#[test]
fn a_helper_that_cannot_confine_never_starts_the_program() {
    if !layered() {
        return;
    }
    let out = bare_view(
        &[],
        &[
            "/run/heartwood/confine",
            "--read",
            "/usr",
            "--",
            "/usr/bin/no-such-program",
        ],
    );
    assert_eq!(out.status.code(), Some(125), "{out:?}");
    let usage = bare_view(
        &[],
        &["/run/heartwood/confine", "--read", "/usr", "/usr/bin/true"],
    );
    assert_eq!(usage.status.code(), Some(125), "{usage:?}");
    assert!(text(&usage.stderr).contains("usage"), "{usage:?}");
}

fn status_sandbox(project: &Path, helper: Option<&str>) -> Value {
    let mut command = Command::new(env!("CARGO_BIN_EXE_heartwood"));
    command.args(["status", "--json"]).current_dir(project);
    if let Some(helper) = helper {
        command.env("HEARTWOOD_CONFINE", helper);
    }
    let out = command.output().expect("heartwood");
    let plan: Value = serde_json::from_slice(&out.stdout).expect("status JSON");
    plan["sandbox"].clone()
}

#[test]
fn heartwood_status_says_whether_the_landlock_layer_is_on_and_why_not() {
    if !layered() {
        return;
    }
    let project = tempfile::tempdir().expect("project");
    let on = status_sandbox(project.path(), None);
    let detail = on["detail"].as_str().expect("detail");
    assert!(
        detail.contains("Landlock layered under the view"),
        "{detail}"
    );
    assert!(detail.contains("heartwood-confine"), "{detail}");
    let missing = status_sandbox(project.path(), Some("/nonexistent/heartwood-confine"));
    let detail = missing["detail"].as_str().expect("detail");
    assert_eq!(
        missing["enforcing"], true,
        "the view still confines: {detail}"
    );
    assert!(detail.contains("no Landlock layer"), "{detail}");
    assert!(detail.contains("HEARTWOOD_CONFINE"), "{detail}");
    // The plain status says it too.
    let out = heartwood(project.path(), &["status"]);
    assert!(
        text(&out.stdout).contains("Landlock"),
        "{}",
        text(&out.stdout)
    );
}

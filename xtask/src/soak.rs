//! `cargo xtask soak --minutes N [--seed S]`: random interleavings of tasks, decisions,
//! guidance, pause, resume and interrupts across sessions, from two interfaces (the `heartwood`
//! command line and a long-lived `heartwood serve` over HTTP), with command-line processes
//! killed at random moments, against the scripted model server.
//!
//! Every action the model proposes appends its own token to `ran.txt`, so an action that ran
//! twice shows as a repeated token. At the end `serve` is stopped as the researcher would stop
//! it, and the soak checks that every session verifies (after `sessions recover` where a kill
//! left an append waiting for recovery), that no token repeats, and that `serve`'s resident
//! memory stayed flat.
//!
//! A kill at a random moment lands between an append's intent and its data (a window of a few
//! microseconds on a fast disk) only a few times an hour, so half the kills are moved there on
//! purpose: the killed process's last intent is kept and the data files are cut back to the
//! lengths it recorded, exactly the files a kill right after the intent's `fdatasync` leaves
//! (and a power loss, which loses unsynced data, too). `sessions verify` must then answer
//! "intact, waiting for recovery" (exit 3), never "damaged" (exit 1); a look by `serve` must
//! leave it so (reads are side-effect free), and `serve`'s next command on the session must
//! complete the append.

use std::collections::BTreeSet;
use std::io::BufRead;
use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use anyhow::{Context, Result, bail};
use heartwood_testkit::load::request;
use heartwood_testkit::{Script, ScriptedModelServer, Turn};
use serde_json::{Value, json};

/// What the soak did and saw.
#[derive(Debug, Default)]
struct Tally {
    steps: usize,
    tasks: usize,
    decisions: usize,
    guidance: usize,
    controls: usize,
    kills: usize,
    /// Kills moved into the window between an append's intent and its data.
    kills_in_window: usize,
    verifications_during: usize,
    /// Verifications during the run that found an append waiting for recovery (exit 3).
    awaiting_during: usize,
    /// Of those, the appends `serve` completed on its next command on the session.
    completed_by_serve: usize,
    failures: Vec<String>,
}

/// `heartwood sessions verify`'s exit code for a session that is intact with an interrupted
/// append waiting for recovery.
const AWAITING_RECOVERY: i32 = 3;

/// Runs the soak for `minutes`; `seed` repeats an earlier run's choices.
pub fn run(minutes: f64, seed: Option<u64>) -> Result<()> {
    let seed = seed.unwrap_or_else(|| fastrand::u64(..));
    println!("soak for {minutes} min, seed {seed} (repeat with --seed {seed})");
    let mut rng = fastrand::Rng::with_seed(seed);
    let bin_dir = tempfile::tempdir()?;
    let bin = heartwood_binary(bin_dir.path())?;
    let project = tempfile::tempdir()?;
    let project = project.path();
    let runtime = tokio::runtime::Runtime::new()?;
    let model = runtime
        .block_on(ScriptedModelServer::start(script()))
        .context("starting the scripted model server")?;
    let connected = heartwood(
        &bin,
        project,
        &[
            "model",
            "connect",
            "--category",
            "compatible",
            "--base-url",
            &model.base_url(),
            "--model",
            "scripted",
        ],
    )?;
    if !connected.status.success() {
        bail!(
            "`heartwood model connect` failed: {}",
            String::from_utf8_lossy(&connected.stderr)
        );
    }
    let serve = Serve::start(&bin, project)?;
    let mut tally = Tally::default();
    let mut sessions: Vec<String> = Vec::new();
    let mut rss: Vec<(f64, u64)> = Vec::new();
    let started = Instant::now();
    let deadline = started + Duration::from_secs_f64(minutes * 60.0);
    while Instant::now() < deadline {
        tally.steps += 1;
        if tally.steps % 10 == 1 {
            sessions = listed_sessions(&bin, project)?;
        }
        let session = (!sessions.is_empty()).then(|| sessions[rng.usize(..sessions.len())].clone());
        let n = tally.steps;
        match (rng.u8(..100), session) {
            (0..15, _) => {
                tally.tasks += 1;
                let task = format!("soak task {n}");
                let child = spawn(&bin, project, &["exec", "--json", &task])?;
                let killed = finish_or_kill(child, &mut rng, &mut tally)?;
                into_window(killed, &bin, project, &serve, &mut rng, &mut tally)?;
            }
            (15..30, _) => {
                tally.tasks += 1;
                let (status, body) = serve.call("POST", "/api/sessions", "");
                let minted: Value = serde_json::from_str(&body).unwrap_or_default();
                if let (201, Some(id)) = (status, minted["session"].as_str()) {
                    let task = json!({"type": "submit_task", "text": format!("soak task {n}")});
                    serve.command(id, &task);
                    sessions.push(id.to_owned());
                }
            }
            (30..50, Some(id)) => {
                tally.decisions += 1;
                let decision = if rng.u8(..4) == 0 { "reject" } else { "allow" };
                let child = spawn(&bin, project, &["decide", &id, decision])?;
                let killed = finish_or_kill(child, &mut rng, &mut tally)?;
                into_window(killed, &bin, project, &serve, &mut rng, &mut tally)?;
            }
            (50..70, Some(id)) => {
                let (_, body) = serve.call("GET", &format!("/api/sessions/{id}/snapshot"), "");
                let snapshot: Value = serde_json::from_str(&body).unwrap_or_default();
                let pending = &snapshot["projection"]["pending"];
                if let (Some(set), Some(revision)) =
                    (pending["set_id"].as_str(), pending["revision"].as_u64())
                {
                    tally.decisions += 1;
                    let decision = if rng.u8(..4) == 0 { "reject" } else { "allow" };
                    let decide = json!({"type": "decide", "set_id": set, "revision": revision,
                                        "decision": decision});
                    serve.command(&id, &decide);
                }
            }
            (70..80, Some(id)) => {
                tally.guidance += 1;
                let guide = json!({"type": "send_guidance", "text": format!("soak note {n}")});
                serve.command(&id, &guide);
            }
            (80..92, Some(id)) => {
                tally.controls += 1;
                let kind = ["pause", "resume", "interrupt"][rng.usize(..3)];
                serve.command(&id, &json!({ "type": kind }));
            }
            (_, Some(id)) => verify_during(&bin, project, &serve, &id, &mut tally)?,
            (_, None) => {}
        }
        if let Some(kib) = serve.rss_kib() {
            rss.push((started.elapsed().as_secs_f64(), kib));
        }
        if rng.u8(..4) == 0 {
            std::thread::sleep(Duration::from_millis(rng.u64(50..500)));
        }
    }
    serve.stop()?;
    drop(model);
    check(&bin, project, &mut tally, &rss)?;
    println!(
        "{} steps in {:.1} min: {} sessions, {} tasks, {} decisions, {} guidance, {} controls, \
         {} processes killed ({} moved between an intent and its data), {} verifications \
         during the run ({} found an append waiting for recovery, {} of them completed by \
         serve's next command on it)",
        tally.steps,
        started.elapsed().as_secs_f64() / 60.0,
        listed_sessions(&bin, project)?.len(),
        tally.tasks,
        tally.decisions,
        tally.guidance,
        tally.controls,
        tally.kills,
        tally.kills_in_window,
        tally.verifications_during,
        tally.awaiting_during,
        tally.completed_by_serve
    );
    if !tally.failures.is_empty() {
        for failure in &tally.failures {
            eprintln!("FAILED: {failure}");
        }
        bail!(
            "{} soak invariant(s) failed (seed {seed})",
            tally.failures.len()
        );
    }
    println!("every invariant held");
    Ok(())
}

/// A model that, turn after turn, proposes an action writing a fresh token, and now and then
/// finishes. Turns are served in order to whichever session asks next.
fn script() -> Script {
    Script::of(
        (0..20_000)
            .map(|i| {
                if i % 3 == 2 {
                    Turn::calls(&[("finish", json!({"message": format!("done {i}")}))])
                } else {
                    let command = format!("echo tok-{i} >> ran.txt");
                    Turn::calls(&[("terminal", json!({ "command": command }))])
                }
            })
            .collect(),
    )
}

/// Waits for a command-line process, or kills it at a random moment (one time in three);
/// returns the pid of a process it killed.
fn finish_or_kill(
    mut child: Child,
    rng: &mut fastrand::Rng,
    tally: &mut Tally,
) -> Result<Option<u32>> {
    let mut killed = None;
    if rng.u8(..3) == 0 {
        std::thread::sleep(Duration::from_millis(rng.u64(5..250)));
        if child.try_wait()?.is_none() {
            child.kill()?;
            tally.kills += 1;
            killed = Some(child.id());
        }
    }
    let waited = Instant::now();
    while child.try_wait()?.is_none() {
        if waited.elapsed() > Duration::from_secs(120) {
            child.kill()?;
            tally
                .failures
                .push("a command-line process ran for over two minutes".to_owned());
            break;
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    Ok(killed)
}

/// One time in two, moves a kill back to just after the killed process's last intent was
/// synced (see the module's doc); then verifies that session at once (the first time, and
/// then one time in two).
fn into_window(
    killed: Option<u32>,
    bin: &Path,
    project: &Path,
    serve: &Serve,
    rng: &mut fastrand::Rng,
    tally: &mut Tally,
) -> Result<()> {
    let Some(pid) = killed else { return Ok(()) };
    if rng.bool() {
        return Ok(());
    }
    // The session the killed process held: the lease's record names it (the kernel released
    // the lock itself when the process died; nobody has taken it since, the soak is one step
    // at a time).
    let sessions = project.join(".heartwood/sessions");
    let held = std::fs::read_dir(&sessions)
        .into_iter()
        .flatten()
        .flatten()
        .map(|entry| entry.path())
        .find(|dir| {
            std::fs::read(dir.join("writer.json"))
                .ok()
                .and_then(|b| serde_json::from_slice::<Value>(&b).ok())
                .is_some_and(|w| w["pid"].as_u64() == Some(u64::from(pid)))
        });
    let Some(dir) = held else { return Ok(()) };
    if !cut_back_to_last_intent(&dir)? {
        return Ok(());
    }
    tally.kills_in_window += 1;
    // Always until one such verification has been made, so even a short run makes one.
    if (tally.awaiting_during == 0 || rng.bool())
        && let Some(id) = dir.file_name().and_then(|n| n.to_str())
    {
        verify_during(bin, project, serve, id, tally)?;
    }
    Ok(())
}

/// Cuts `events.jsonl`, `audit.jsonl` and `receipts.jsonl` back to the lengths the last intent
/// in `journal.json` recorded (docs/journal-format.md), if an intent is pending and the files
/// hold nothing but its bytes past them; says whether it did.
fn cut_back_to_last_intent(dir: &Path) -> Result<bool> {
    let journal = std::fs::read_to_string(dir.join("journal.json")).unwrap_or_default();
    let Some(last) = journal.lines().rev().find(|l| !l.trim().is_empty()) else {
        return Ok(false);
    };
    let Ok(intent) = serde_json::from_str::<Value>(last) else {
        return Ok(false);
    };
    let files = [
        ("events.jsonl", "events_len", "events"),
        ("audit.jsonl", "audit_len", "audit"),
        ("receipts.jsonl", "receipts_len", "receipts"),
    ];
    let mut cuts = Vec::new();
    for (file, len_key, bytes_key) in files {
        let (Some(len), Some(bytes)) = (intent[len_key].as_u64(), intent[bytes_key].as_str())
        else {
            return Ok(false);
        };
        let path = dir.join(file);
        let now = std::fs::metadata(&path).map_or(0, |m| m.len());
        let content = std::fs::read(&path).unwrap_or_default();
        let start = usize::try_from(len).unwrap_or(usize::MAX);
        // Only the intent's own bytes (or a prefix of them) may follow: anything else means
        // this is not the state a kill there would leave.
        match content.get(start..) {
            Some(tail) if bytes.as_bytes().starts_with(tail) => cuts.push((path, len, now)),
            _ => return Ok(false),
        }
    }
    for (path, len, now) in cuts {
        if now > len {
            std::fs::OpenOptions::new()
                .write(true)
                .open(&path)
                .and_then(|f| f.set_len(len))
                .with_context(|| format!("cutting {} back to {len} bytes", path.display()))?;
        }
    }
    Ok(true)
}

/// `sessions verify` during the run: intact (exit 0), or intact with an append waiting for
/// recovery (exit 3), which a look by `serve` leaves as it is and `serve`'s next command on the
/// session completes; anything else fails the soak.
fn verify_during(
    bin: &Path,
    project: &Path,
    serve: &Serve,
    id: &str,
    tally: &mut Tally,
) -> Result<()> {
    tally.verifications_during += 1;
    let verified = heartwood(bin, project, &["sessions", "verify", id])?;
    let said = |out: &std::process::Output| {
        format!(
            "{} {}",
            String::from_utf8_lossy(&out.stdout).trim(),
            String::from_utf8_lossy(&out.stderr).trim()
        )
    };
    match verified.status.code() {
        Some(0) => {}
        Some(AWAITING_RECOVERY) => {
            tally.awaiting_during += 1;
            // A look is side-effect free: it shows the intact record and leaves the append
            // waiting. The next command through serve takes the session over and completes it.
            let (status, body) = serve.call("GET", &format!("/api/sessions/{id}/snapshot"), "");
            let looked = heartwood(bin, project, &["sessions", "verify", id])?;
            if status != 200 || looked.status.code() != Some(AWAITING_RECOVERY) {
                tally.failures.push(format!(
                    "session {id} had an append waiting for recovery, and serve's look at it \
                     (HTTP {status}: {}) did not leave it so: {}",
                    body.chars().take(300).collect::<String>(),
                    said(&looked)
                ));
                return Ok(());
            }
            let note = json!({"type": "send_guidance", "text": "soak: after a kill"});
            let (status, body) = serve.command(id, &note);
            let again = heartwood(bin, project, &["sessions", "verify", id])?;
            if again.status.success() {
                tally.completed_by_serve += 1;
            } else {
                tally.failures.push(format!(
                    "session {id} had an append waiting for recovery, and serve's next command \
                     on it (HTTP {status}: {}) did not complete it: {}",
                    body.chars().take(300).collect::<String>(),
                    said(&again)
                ));
            }
        }
        _ => tally.failures.push(format!(
            "session {id} did not verify during the soak: {}",
            said(&verified)
        )),
    }
    Ok(())
}

/// The checks at the end, with `serve` stopped.
fn check(bin: &Path, project: &Path, tally: &mut Tally, rss: &[(f64, u64)]) -> Result<()> {
    let mut recovered = 0;
    for id in listed_sessions(bin, project)? {
        let verified = heartwood(bin, project, &["sessions", "verify", &id])?;
        match verified.status.code() {
            Some(0) => continue,
            // Intact, with an append a kill interrupted that no process has taken over since.
            Some(AWAITING_RECOVERY) => recovered += 1,
            _ => tally.failures.push(format!(
                "session {id} does not verify (neither intact nor waiting for recovery): {} {}",
                String::from_utf8_lossy(&verified.stdout).trim(),
                String::from_utf8_lossy(&verified.stderr).trim()
            )),
        }
        let recover = heartwood(bin, project, &["sessions", "recover", &id])?;
        let verified = heartwood(bin, project, &["sessions", "verify", &id])?;
        if !verified.status.success() {
            tally.failures.push(format!(
                "session {id} does not verify after `sessions recover` ({} {}): {} {}",
                String::from_utf8_lossy(&recover.stdout).trim(),
                String::from_utf8_lossy(&recover.stderr).trim(),
                String::from_utf8_lossy(&verified.stdout).trim(),
                String::from_utf8_lossy(&verified.stderr).trim()
            ));
        }
    }
    let ran = std::fs::read_to_string(project.join("ran.txt")).unwrap_or_default();
    let tokens: Vec<&str> = ran.lines().collect();
    let distinct: BTreeSet<&str> = tokens.iter().copied().collect();
    if distinct.len() != tokens.len() {
        tally.failures.push(format!(
            "{} actions ran more than once",
            tokens.len() - distinct.len()
        ));
    }
    println!(
        "actions run: {} (each token once: {}); sessions left waiting for recovery at the end \
         (completed by `sessions recover`): {recovered}",
        tokens.len(),
        distinct.len() == tokens.len()
    );
    // Memory: after the first quarter (start-up, caches filling) the resident size should not
    // keep growing. A leak of a few KiB per step shows over minutes; noise does not double it.
    let span = rss.last().map_or(0.0, |(t, _)| *t);
    let settled: Vec<u64> = rss
        .iter()
        .filter(|(t, _)| *t >= span / 4.0)
        .map(|(_, kib)| *kib)
        .collect();
    if let (Some(first), Some(last), Some(peak)) =
        (settled.first(), settled.last(), settled.iter().max())
    {
        println!(
            "serve resident memory: {:.1} MiB after the first quarter, {:.1} MiB at the end, \
             {:.1} MiB at most ({} samples)",
            *first as f64 / 1024.0,
            *last as f64 / 1024.0,
            *peak as f64 / 1024.0,
            rss.len()
        );
        if *last > first * 3 / 2 + 16 * 1024 {
            tally.failures.push(format!(
                "serve's resident memory grew from {first} KiB to {last} KiB"
            ));
        }
    }
    Ok(())
}

/// The long-lived `heartwood serve`.
struct Serve {
    child: Child,
    addr: SocketAddr,
    token: String,
}

impl Serve {
    fn start(bin: &Path, project: &Path) -> Result<Serve> {
        let mut child = Command::new(bin)
            .arg("serve")
            .current_dir(project)
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .context("starting `heartwood serve`")?;
        let stdout = child.stdout.take().context("serve's output")?;
        let url = std::io::BufReader::new(stdout)
            .lines()
            .map_while(Result::ok)
            .find_map(|l| {
                l.trim()
                    .strip_prefix("http://127.0.0.1:")
                    .map(str::to_owned)
            })
            .context("`heartwood serve` printed no URL")?;
        let (port, rest) = url.split_once('/').context("a URL without a path")?;
        Ok(Serve {
            child,
            addr: SocketAddr::from(([127, 0, 0, 1], port.parse()?)),
            token: rest.strip_prefix("?token=").context("no token")?.to_owned(),
        })
    }

    fn call(&self, method: &str, path: &str, body: &str) -> (u16, String) {
        request((self.addr, &self.token), method, path, body)
    }

    fn command(&self, session: &str, command: &Value) -> (u16, String) {
        self.call(
            "POST",
            &format!("/api/sessions/{session}/commands"),
            &command.to_string(),
        )
    }

    fn rss_kib(&self) -> Option<u64> {
        let status = std::fs::read_to_string(format!("/proc/{}/status", self.child.id())).ok()?;
        status
            .lines()
            .find_map(|l| l.strip_prefix("VmRSS:"))?
            .split_whitespace()
            .next()?
            .parse()
            .ok()
    }

    /// Stops `serve` as Ctrl-C would, and waits for it to close its sessions.
    fn stop(mut self) -> Result<()> {
        Command::new("kill")
            .args(["-INT", &self.child.id().to_string()])
            .status()
            .context("sending SIGINT to serve")?;
        let waited = Instant::now();
        while self.child.try_wait()?.is_none() {
            if waited.elapsed() > Duration::from_secs(60) {
                self.child.kill()?;
                bail!("`heartwood serve` did not stop within a minute of Ctrl-C");
            }
            std::thread::sleep(Duration::from_millis(50));
        }
        Ok(())
    }
}

/// The `heartwood` binary, built (debug) if need be and copied into `into`: a target directory
/// shared with other checkouts may have its `heartwood` replaced by their builds while the soak
/// runs, and the soak must run one binary throughout.
fn heartwood_binary(into: &Path) -> Result<PathBuf> {
    crate::cargo(&["build", "--quiet", "-p", "heartwood-cli"])?;
    let dir = std::env::var_os("CARGO_TARGET_DIR")
        .map_or_else(|| crate::workspace_root().join("target"), PathBuf::from);
    let built = dir.join("debug/heartwood");
    let copy = into.join("heartwood");
    std::fs::copy(&built, &copy)
        .with_context(|| format!("copying {} for the soak", built.display()))?;
    Ok(copy)
}

fn spawn(bin: &Path, project: &Path, args: &[&str]) -> Result<Child> {
    Command::new(bin)
        .args(args)
        .current_dir(project)
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .with_context(|| format!("running heartwood {}", args.join(" ")))
}

fn heartwood(bin: &Path, project: &Path, args: &[&str]) -> Result<std::process::Output> {
    Command::new(bin)
        .args(args)
        .current_dir(project)
        .stdin(Stdio::null())
        .output()
        .with_context(|| format!("running heartwood {}", args.join(" ")))
}

fn listed_sessions(bin: &Path, project: &Path) -> Result<Vec<String>> {
    let listed = heartwood(bin, project, &["sessions", "ls", "--json"])?;
    let rows: Value = serde_json::from_slice(&listed.stdout).unwrap_or_default();
    Ok(rows
        .as_array()
        .map(|rows| {
            rows.iter()
                .filter_map(|r| r["id"].as_str().map(str::to_owned))
                .collect()
        })
        .unwrap_or_default())
}

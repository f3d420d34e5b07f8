//! `heartwood batch --engine slurm` on a real, throwaway single-node Slurm cluster (Debian's
//! slurmctld, slurmd and munge, started here as root with their state in a temporary
//! directory): a job array of eight items on the scripted model server, one task cancelled
//! mid-run and requeued, every item verified, no action run twice; and two Slurm tasks given the
//! same item, of which only one drives it.
//!
//! Where the cluster cannot start (not root, packages missing) the test fails under `CI=true`
//! and is skipped, saying why, elsewhere.

mod support;

use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};
use std::time::{Duration, Instant};

use heartwood_testkit::{Fault, Script, ScriptedModelServer, Turn};
use serde_json::{Value, json};
use support::batch::{item, manifest, marker, row, runs_per_action};
use support::{code, text};

const ITEMS: usize = 8;
const VICTIM: usize = 5;
/// The item two Slurm tasks are given at once.
const SHARED: usize = ITEMS;

/// A single-node cluster: munged, slurmctld and slurmd, stopped when dropped.
struct Cluster {
    dir: tempfile::TempDir,
}

impl Cluster {
    fn conf(&self) -> PathBuf {
        self.dir.path().join("slurm.conf")
    }

    /// Starts the daemons, or says why they cannot start here.
    fn start() -> Result<Cluster, String> {
        let uid = std::fs::read_to_string("/proc/self/status")
            .ok()
            .and_then(|s| s.lines().find(|l| l.starts_with("Uid:")).map(str::to_owned))
            .unwrap_or_default();
        if uid.split_whitespace().nth(1) != Some("0") {
            return Err("the throwaway cluster is started as root, and this is not root".into());
        }
        for program in [
            "munged",
            "slurmctld",
            "slurmd",
            "sbatch",
            "squeue",
            "scontrol",
        ] {
            let found = Command::new("sh")
                .args(["-c", &format!("command -v {program}")])
                .stdout(Stdio::null())
                .status()
                .is_ok_and(|s| s.success());
            if !found {
                return Err(format!(
                    "{program} is not installed (apt-get install slurm-wlm munge)"
                ));
            }
        }
        let dir = tempfile::Builder::new()
            .prefix("heartwood-slurm")
            .tempdir()
            .map_err(|e| e.to_string())?;
        let d = dir.path().to_path_buf();
        let d = d.as_path();
        let cluster = Cluster { dir };
        for sub in ["munge", "state", "spool", "logs"] {
            std::fs::create_dir_all(d.join(sub)).map_err(|e| e.to_string())?;
        }
        // munged's socket directory must be searchable by all; its key readable by munge only.
        let mut key = Vec::new();
        std::io::Read::read_to_end(
            &mut std::io::Read::take(
                std::fs::File::open("/dev/urandom").map_err(|e| e.to_string())?,
                1024,
            ),
            &mut key,
        )
        .map_err(|e| e.to_string())?;
        std::fs::write(d.join("munge/munge.key"), key).map_err(|e| e.to_string())?;
        sh(&format!(
            "chmod 755 {d} && chown -R munge:munge {d}/munge && chmod 711 {d}/munge && \
             chmod 400 {d}/munge/munge.key",
            d = d.display()
        ))?;
        sh(&format!(
            "runuser -u munge -- munged --key-file={d}/munge/munge.key \
             --socket={d}/munge/munge.socket --pid-file={d}/munge/munged.pid \
             --log-file={d}/munge/munged.log --seed-file={d}/munge/munged.seed",
            d = d.display()
        ))?;
        let (ctld, slurmd) = (free_port(), free_port());
        let memory = 4000;
        let conf = format!(
            "ClusterName=heartwood\nSlurmctldHost=localhost\nSlurmUser=root\nSlurmdUser=root\n\
             AuthType=auth/munge\nAuthInfo=socket={d}/munge/munge.socket\nCredType=cred/munge\n\
             SlurmctldPort={ctld}\nSlurmdPort={slurmd}\nStateSaveLocation={d}/state\n\
             SlurmdSpoolDir={d}/spool\nSlurmctldPidFile={d}/slurmctld.pid\n\
             SlurmdPidFile={d}/slurmd.pid\nSlurmctldLogFile={d}/logs/slurmctld.log\n\
             SlurmdLogFile={d}/logs/slurmd.log\nProctrackType=proctrack/linuxproc\n\
             TaskPlugin=task/none\nJobAcctGatherType=jobacct_gather/none\n\
             SelectType=select/cons_tres\nSelectTypeParameters=CR_Core\nReturnToService=2\n\
             MpiDefault=none\nNodeName=localhost CPUs={cpus} RealMemory={memory} State=UNKNOWN\n\
             PartitionName=debug Nodes=localhost Default=YES MaxTime=INFINITE State=UP\n",
            d = d.display(),
            cpus = std::thread::available_parallelism().map_or(2, |n| n.get()),
        );
        std::fs::write(cluster.conf(), conf).map_err(|e| e.to_string())?;
        let env = format!("SLURM_CONF={}", cluster.conf().display());
        sh(&format!("{env} slurmctld"))?;
        sh(&format!("{env} slurmd -N localhost"))?;
        let started = Instant::now();
        loop {
            let idle = cluster
                .slurm("sinfo", &["-h", "-o", "%t"])
                .is_ok_and(|o| text(&o.stdout).contains("idle"));
            if idle {
                return Ok(cluster);
            }
            if started.elapsed() > Duration::from_secs(30) {
                let logs =
                    std::fs::read_to_string(d.join("logs/slurmctld.log")).unwrap_or_default();
                return Err(format!("the node never became idle:\n{logs}"));
            }
            std::thread::sleep(Duration::from_millis(200));
        }
    }

    /// Runs a Slurm client command against this cluster.
    fn slurm(&self, program: &str, args: &[&str]) -> Result<Output, String> {
        Command::new(program)
            .args(args)
            .env("SLURM_CONF", self.conf())
            .output()
            .map_err(|e| format!("{program}: {e}"))
    }

    /// Waits until the queue is empty (at most `limit`).
    fn drained(&self, limit: Duration) {
        let started = Instant::now();
        loop {
            let queue = self.slurm("squeue", &["-h"]).expect("squeue");
            if text(&queue.stdout).trim().is_empty() {
                return;
            }
            assert!(
                started.elapsed() < limit,
                "the queue never drained:\n{}",
                text(&queue.stdout)
            );
            std::thread::sleep(Duration::from_millis(250));
        }
    }
}

impl Drop for Cluster {
    fn drop(&mut self) {
        let d = self.dir.path();
        for pid_file in ["slurmd.pid", "slurmctld.pid", "munge/munged.pid"] {
            if let Ok(pid) = std::fs::read_to_string(d.join(pid_file)) {
                let _ = Command::new("kill").arg(pid.trim()).status();
            }
        }
        std::thread::sleep(Duration::from_millis(300));
    }
}

fn sh(script: &str) -> Result<(), String> {
    let out = Command::new("sh")
        .args(["-c", script])
        .output()
        .map_err(|e| e.to_string())?;
    if out.status.success() {
        Ok(())
    } else {
        Err(format!("`{script}` failed: {}", text(&out.stderr)))
    }
}

fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .map(|a| a.port())
        .expect("a free port")
}

/// `heartwood batch ARGS` in `root`, talking to `cluster`.
async fn batch(cluster: &Cluster, root: &Path, args: &[&str]) -> Output {
    tokio::process::Command::new(env!("CARGO_BIN_EXE_heartwood"))
        .arg("batch")
        .args(args)
        .current_dir(root)
        .env("SLURM_CONF", cluster.conf())
        .output()
        .await
        .expect("heartwood batch")
}

async fn status(cluster: &Cluster, root: &Path, manifest: &Path) -> Value {
    let out = batch(
        cluster,
        root,
        &["status", &manifest.to_string_lossy(), "--json"],
    )
    .await;
    assert!(out.status.success(), "{}", text(&out.stderr));
    serde_json::from_slice(&out.stdout).expect("status json")
}

#[tokio::test(flavor = "multi_thread")]
async fn a_slurm_batch_runs_as_a_job_array_and_a_cancelled_task_continues_when_requeued() {
    let cluster = match Cluster::start() {
        Ok(cluster) => cluster,
        Err(why) => {
            assert!(
                std::env::var("CI").as_deref() != Ok("true"),
                "CI=true and the Slurm cluster cannot start: {why}"
            );
            eprintln!("skipped: the Slurm cluster cannot start here: {why}");
            return;
        }
    };
    let root = tempfile::tempdir().expect("root");
    let server = ScriptedModelServer::start(Script::of(vec![]))
        .await
        .expect("server");
    for k in 0..=SHARED {
        // A read-only command the low-risk policy runs in the sandbox, then the answer.
        let mut lane = vec![Turn::calls(&[(
            "terminal",
            json!({"command": "wc -l data.txt"}),
        )])];
        match k {
            VICTIM => lane.extend([
                Turn::text(&"slowly ".repeat(600)).with_fault(Fault::ChunkDelayMs(50)),
                Turn::text("continued after the requeue"),
            ]),
            SHARED => {
                lane.push(Turn::text(&"steadily ".repeat(400)).with_fault(Fault::ChunkDelayMs(20)));
            }
            _ => lane.push(Turn::text(&format!("item {k} counted its lines"))),
        }
        server.push_lane(&marker(k), lane);
    }
    let manifest = manifest(
        root.path(),
        &server.base_url(),
        SHARED + 1,
        "low-risk",
        "count the lines of data.txt",
    );
    let m = manifest.to_string_lossy().into_owned();

    // Two Slurm tasks given the same item at once: one drives it, the other leaves it alone.
    let exe = env!("CARGO_BIN_EXE_heartwood");
    let logs = root.path().join("shared-logs");
    std::fs::create_dir_all(&logs).expect("logs");
    for n in 0..2 {
        let wrap = format!("{exe} batch worker {m} {SHARED}");
        let out = cluster
            .slurm(
                "sbatch",
                &[
                    "--parsable",
                    &format!("--output={}/{n}.out", logs.display()),
                    "--wrap",
                    &wrap,
                ],
            )
            .expect("sbatch");
        assert!(out.status.success(), "{}", text(&out.stderr));
    }
    cluster.drained(Duration::from_secs(120));
    let said: Vec<String> = (0..2)
        .map(|n| std::fs::read_to_string(logs.join(format!("{n}.out"))).unwrap_or_default())
        .collect();
    assert_eq!(
        said.iter()
            .filter(|s| s.contains("another worker holds this item"))
            .count(),
        1,
        "exactly one of the two tasks stood back: {said:?}"
    );
    let shown = status(&cluster, root.path(), &manifest).await;
    let shared = row(&shown, SHARED);
    assert_eq!(shared["phase"], "done", "{shared}");
    let shared_project = PathBuf::from(shared["project"].as_str().expect("project"));
    let shared_session = shared["session"].as_str().expect("session");
    assert_eq!(
        support::batch::event_types(&shared_project, shared_session)
            .iter()
            .filter(|t| *t == "task_submitted")
            .count(),
        1,
        "the item's task was given once"
    );

    // The batch: one job array; item SHARED is done already, so it covers the other eight.
    let submitted = batch(
        &cluster,
        root.path(),
        &["run", &m, "--engine", "slurm", "--jobs", "4"],
    )
    .await;
    assert!(submitted.status.success(), "{}", text(&submitted.stderr));
    let job =
        std::fs::read_to_string(root.path().join("study.batch/slurm/jobs.json")).expect("jobs");
    let jobs: Value = serde_json::from_str(&job).expect("jobs json");
    let job_id = jobs[0]["job_id"].as_str().expect("job id").to_owned();
    let script =
        std::fs::read_to_string(jobs[0]["script"].as_str().expect("script")).expect("script");
    assert!(script.contains("#SBATCH --array=0-7%4"), "{script}");
    assert!(script.contains("batch worker"), "{script}");

    // Cancel the victim's task while its slow reply streams.
    let started = Instant::now();
    while server.remaining_in_lane(&marker(VICTIM)) > 1 {
        assert!(
            started.elapsed() < Duration::from_secs(120),
            "the victim never got going"
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    let victim_task = format!("{job_id}_{VICTIM}");
    let cancelled = cluster.slurm("scancel", &[&victim_task]).expect("scancel");
    assert!(cancelled.status.success(), "{}", text(&cancelled.stderr));
    cluster.drained(Duration::from_secs(180));
    let shown = status(&cluster, root.path(), &manifest).await;
    let victim = row(&shown, VICTIM);
    assert_eq!(victim["phase"], "interrupted", "{victim}");
    for k in (0..ITEMS).filter(|k| *k != VICTIM) {
        assert_eq!(row(&shown, k)["phase"], "done", "{}", row(&shown, k));
    }

    // Requeued, the same task continues the item's session from its journal.
    let requeued = cluster
        .slurm("scontrol", &["requeue", &victim_task])
        .expect("requeue");
    assert!(requeued.status.success(), "{}", text(&requeued.stderr));
    // A requeued job waits out a begin time; this test has no need to.
    let _ = cluster.slurm(
        "scontrol",
        &["update", &format!("JobId={victim_task}"), "StartTime=now"],
    );
    cluster.drained(Duration::from_secs(300));
    let shown = status(&cluster, root.path(), &manifest).await;
    let victim = row(&shown, VICTIM);
    assert_eq!(victim["phase"], "done", "{victim}");
    assert_eq!(victim["attempts"], 2, "{victim}");
    for k in 0..=SHARED {
        let r = row(&shown, k);
        let project = PathBuf::from(r["project"].as_str().expect("project"));
        let runs = runs_per_action(&project, r["session"].as_str().expect("session"));
        assert_eq!(runs.len(), 1, "{} ran one action: {runs:?}", item(k));
        assert!(
            runs.values().all(|n| *n == 1),
            "{} ran an action twice: {runs:?}",
            item(k)
        );
    }
    assert_eq!(server.remaining_in_lane(&marker(VICTIM)), 0);

    let collected = batch(&cluster, root.path(), &["collect", &m]).await;
    assert_eq!(
        code(&collected),
        0,
        "{}{}",
        text(&collected.stdout),
        text(&collected.stderr)
    );
    let csv = std::fs::read_to_string(root.path().join("study.batch/results.csv")).expect("csv");
    assert_eq!(csv.lines().count(), SHARED + 2, "{csv}");
}

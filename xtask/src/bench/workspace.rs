//! `cargo xtask bench workspace`: the tree and changed paths of a generated 100,000-file Git
//! repository, each next to the `git` command that answers the same question, timed in the
//! same run (`git ls-files` and `git status --porcelain`), and the memory both take.

use std::path::Path;
use std::process::Command;
use std::time::Instant;

use anyhow::{Context, Result, bail};
use heartwood_gateway::ProjectContext;
use heartwood_gateway::workspace::{ChangeLimits, TreeLimits, WorkspaceService};

use super::peak_rss_kib;

const DIRS: usize = 1_000;
const FILES_PER_DIR: usize = 100;
const MODIFIED: usize = 100;
const UNTRACKED: usize = 100;
const REPEATS: usize = 5;

pub fn run() -> Result<()> {
    let repo = crate::workspace_root().join("target/bench-workspace/repo");
    generate(&repo)?;
    let service =
        WorkspaceService::open(&ProjectContext::at(&repo).expect("a UTF-8 project path"))?;
    let all = TreeLimits {
        max_entries: 200_000,
        max_depth: 12,
    };

    let (mut tree, mut ls_files, mut find, mut changes, mut status) = (
        f64::INFINITY,
        f64::INFINITY,
        f64::INFINITY,
        f64::INFINITY,
        f64::INFINITY,
    );
    for _ in 0..REPEATS {
        tree = tree.min(timed(|| {
            let listed = service.tree("", all)?;
            let files = listed.entries.len() - DIRS;
            if files != DIRS * FILES_PER_DIR + UNTRACKED {
                bail!("tree listed {files} files");
            }
            Ok(())
        })?);
        ls_files = ls_files.min(timed(|| git(&repo, &["ls-files"]).map(drop))?);
        // A walk of the same directories with the sizes the tree reports, for scale: `git
        // ls-files` reads only the index and never touches the files.
        find = find.min(timed(|| {
            let out = Command::new("find")
                .args([".", "-path", "./.git", "-prune", "-o", "-printf", "%P %s\n"])
                .current_dir(&repo)
                .output()?;
            if !out.status.success() {
                bail!("find failed");
            }
            Ok(())
        })?);
        changes = changes.min(timed(|| {
            let found = service.changes(None, ChangeLimits { max_paths: 10_000 })?;
            if found.changes.changes.len() != MODIFIED + UNTRACKED {
                bail!("found {} changes", found.changes.changes.len());
            }
            Ok(())
        })?);
        status = status.min(timed(|| git(&repo, &["status", "--porcelain"]).map(drop))?);
    }
    let files = DIRS * FILES_PER_DIR;
    report(
        &format!("tree, {files} files"),
        tree,
        "git ls-files",
        ls_files,
        None,
    );
    report("", tree, "find -printf '%P %s' (same walk)", find, None);
    report(
        "changed paths",
        changes,
        "git status --porcelain",
        status,
        Some(2.0),
    );

    let out = Command::new(std::env::current_exe()?)
        .args(["bench-child", "workspace-memory"])
        .arg(&repo)
        .output()
        .context("running the memory benchmark")?;
    if !out.status.success() {
        bail!(
            "memory run failed: {}",
            String::from_utf8_lossy(&out.stderr)
        );
    }
    let figures = String::from_utf8_lossy(&out.stdout);
    let mut numbers = figures.split_whitespace().map(str::parse::<f64>);
    let (Some(Ok(base)), Some(Ok(bounded)), Some(Ok(whole))) =
        (numbers.next(), numbers.next(), numbers.next())
    else {
        bail!("unexpected memory output {figures:?}");
    };
    println!(
        "{:<40} {:>9.1} MiB peak with the default bounds ({} entries), {:.1} MiB listing all {files} (process baseline {:.1} MiB)",
        "memory",
        bounded / 1024.0,
        TreeLimits::default().max_entries,
        whole / 1024.0,
        base / 1024.0
    );
    Ok(())
}

/// A child step: peak memory before, after a default-bounded tree and changes, and after a
/// whole-repository tree.
pub fn child(repo: &Path) -> Result<()> {
    let base = peak_rss_kib()?;
    let service = WorkspaceService::open(&ProjectContext::at(repo).expect("a UTF-8 project path"))?;
    service.tree("", TreeLimits::default())?;
    service.changes(None, ChangeLimits::default())?;
    let bounded = peak_rss_kib()?;
    service.tree(
        "",
        TreeLimits {
            max_entries: 200_000,
            max_depth: 12,
        },
    )?;
    println!("{base} {bounded} {}", peak_rss_kib()?);
    Ok(())
}

fn report(what: &str, ours: f64, reference: &str, theirs: f64, target: Option<f64>) {
    let ratio = ours / theirs;
    let verdict = match target {
        Some(t) if ratio <= t => format!("(target <= {t}x) ok"),
        Some(t) => format!("(target <= {t}x) MISSED"),
        None => String::new(),
    };
    println!(
        "{what:<40} {:>9.1} ms   {reference}: {:.1} ms  ratio {ratio:.2} {verdict}",
        ours * 1e3,
        theirs * 1e3
    );
}

fn timed(f: impl FnOnce() -> Result<()>) -> Result<f64> {
    let start = Instant::now();
    f()?;
    Ok(start.elapsed().as_secs_f64())
}

fn git(repo: &Path, args: &[&str]) -> Result<Vec<u8>> {
    let out = Command::new("git")
        .args([
            "-c",
            "user.name=bench",
            "-c",
            "user.email=bench@example.org",
        ])
        .args(args)
        .current_dir(repo)
        .output()
        .context("running git")?;
    if !out.status.success() {
        bail!("git {args:?}: {}", String::from_utf8_lossy(&out.stderr));
    }
    Ok(out.stdout)
}

/// Builds the repository once (kept under target/ between runs): 100,000 committed files,
/// then 100 modified and 100 untracked.
fn generate(repo: &Path) -> Result<()> {
    let marker = repo.with_extension("generated");
    if marker.exists() {
        return Ok(());
    }
    if repo.exists() {
        std::fs::remove_dir_all(repo)?;
    }
    std::fs::create_dir_all(repo)?;
    eprintln!(
        "generating a {}-file repository (once)…",
        DIRS * FILES_PER_DIR
    );
    for d in 0..DIRS {
        let dir = repo.join(format!("d{d:04}"));
        std::fs::create_dir_all(&dir)?;
        for f in 0..FILES_PER_DIR {
            std::fs::write(dir.join(format!("f{f:03}.txt")), format!("{d} {f}\n"))?;
        }
    }
    git(repo, &["init", "-q", "-b", "main"])?;
    git(repo, &["add", "-A"])?;
    git(repo, &["commit", "-q", "-m", "generated"])?;
    for i in 0..MODIFIED {
        std::fs::write(
            repo.join(format!("d{:04}/f000.txt", i * (DIRS / MODIFIED))),
            "changed\n",
        )?;
    }
    for i in 0..UNTRACKED {
        std::fs::write(repo.join(format!("d{:04}/new{i}.txt", i)), "new\n")?;
    }
    // Settle the index's stat data once, as a researcher's own `git status` would have.
    git(repo, &["status", "--porcelain"])?;
    std::fs::write(marker, "")?;
    Ok(())
}

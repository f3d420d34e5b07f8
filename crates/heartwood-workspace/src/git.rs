//! The `git` program, run read-only and hardened.
//!
//! Why the program rather than a library: it is what the researcher's own `git status` runs, so
//! its answer matches theirs on every repository feature (index extensions, sparse checkouts,
//! submodules, attributes), it adds nothing to the build, and `cargo xtask bench workspace`
//! compares against it directly. Hardening, because a repository's own configuration can name
//! programs: no optional locks (plain `git status` rewrites `.git/index`), no fsmonitor, no
//! hooks, no external diff or textconv, no pager, no prompts, no system configuration, and no
//! `GIT_*` variables inherited from the caller.

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

/// A Git work tree the project lives in.
#[derive(Debug, Clone)]
pub(crate) struct Git {
    root: PathBuf,
    /// Where the project sits inside the work tree (`""` at the top, else ending in `/`).
    pub(crate) prefix: String,
}

impl Git {
    /// The repository the project is in, if it is in one and `git` can read it.
    pub(crate) fn detect(root: &Path) -> Option<Git> {
        let mut git = Git {
            root: root.to_owned(),
            prefix: String::new(),
        };
        let out = git
            .run(&["rev-parse", "--is-inside-work-tree", "--show-prefix"])
            .ok()?;
        let mut lines = out.split(|b| *b == b'\n');
        if lines.next()? != b"true" {
            return None;
        }
        git.prefix = String::from_utf8(lines.next().unwrap_or_default().to_vec()).ok()?;
        Some(git)
    }

    /// Runs `git ARGS` in the project; the standard output, or the error text.
    pub(crate) fn run(&self, args: &[&str]) -> Result<Vec<u8>, String> {
        let out = self
            .command(args)
            .output()
            .map_err(|e| format!("cannot run git: {e}"))?;
        if out.status.success() {
            Ok(out.stdout)
        } else {
            Err(String::from_utf8_lossy(&out.stderr).trim().to_owned())
        }
    }

    /// Writes the files of `commit` into the empty folder `into` (`git archive` through the
    /// same hardening, unpacked by `tar`). `commit` must be a full object id: nothing a
    /// session records can smuggle an option into the command line.
    pub(crate) fn export(&self, commit: &str, into: &Path) -> Result<(), String> {
        let is_object_id = matches!(commit.len(), 40 | 64)
            && commit
                .bytes()
                .all(|b| b.is_ascii_hexdigit() && !b.is_ascii_uppercase());
        if !is_object_id {
            return Err(format!("{commit:?} is not a commit id"));
        }
        let mut archive = self
            .command(&["archive", "--format=tar", commit])
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .map_err(|e| format!("cannot run git: {e}"))?;
        let tar_input = archive
            .stdout
            .take()
            .ok_or_else(|| "git archive gave no output".to_owned())?;
        let unpacked = Command::new("tar")
            .args(["-x", "--no-same-owner", "-C"])
            .arg(into)
            .stdin(tar_input)
            .stdout(Stdio::null())
            .output()
            .map_err(|e| format!("cannot run tar: {e}"))?;
        let archived = archive
            .wait_with_output()
            .map_err(|e| format!("git archive did not finish: {e}"))?;
        if !archived.status.success() {
            return Err(String::from_utf8_lossy(&archived.stderr).trim().to_owned());
        }
        if !unpacked.status.success() {
            return Err(String::from_utf8_lossy(&unpacked.stderr).trim().to_owned());
        }
        Ok(())
    }

    fn command(&self, args: &[&str]) -> Command {
        let mut command = Command::new("git");
        for (key, _) in std::env::vars_os() {
            if key.to_string_lossy().starts_with("GIT_") {
                command.env_remove(key);
            }
        }
        command
            .current_dir(&self.root)
            .env("GIT_CONFIG_NOSYSTEM", "1")
            .env("GIT_TERMINAL_PROMPT", "0")
            .env("GIT_OPTIONAL_LOCKS", "0")
            .env("LC_ALL", "C")
            .args([
                "--no-optional-locks",
                "-c",
                "core.fsmonitor=false",
                "-c",
                "core.hooksPath=/dev/null",
                "-c",
                "diff.external=",
                "-c",
                "core.pager=cat",
                "-c",
                "core.quotePath=false",
            ])
            .args(args)
            .stdin(Stdio::null());
        command
    }
}

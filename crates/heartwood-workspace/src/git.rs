//! The `git` program, run read-only, hardened and confined.
//!
//! Why the program rather than a library: it is what the researcher's own `git status` runs, so
//! its answer matches theirs on every repository feature (index extensions, sparse checkouts,
//! submodules, attributes), it adds nothing to the build, and `cargo xtask bench workspace`
//! compares against it directly. Hardening, because a repository's own configuration can name
//! programs: no optional locks (plain `git status` rewrites `.git/index`), no fsmonitor, no
//! hooks, no external diff or textconv, no pager, no prompts, no system or global
//! configuration, and nothing inherited from the caller's environment. And because a list of
//! settings to turn off is a list (a clean filter or a driver it forgets still runs), `git`
//! itself is the system's (never a project environment's on `PATH`) and runs inside the
//! read-only sandbox, seeing only the repository: whatever the project's configuration names
//! runs there, without the network, the home folder or a way to write.

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

use heartwood_sandbox::host::{HostCommand, MINIMAL_ENV, system_program};

/// Why Git could not answer. The system's words are kept as text (`detail`), as
/// [`crate::AccessError`] keeps them, so a workspace error stays comparable and cloneable.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum GitError {
    /// The project is in no Git work tree.
    #[error("the project is not in a Git work tree")]
    NotWorkTree,
    /// The program could not be found or confined.
    #[error("{detail}")]
    Sandbox {
        /// The sandbox's words.
        detail: String,
    },
    /// A program could not be started or waited for.
    #[error("cannot run {program}: {detail}")]
    Run {
        /// `git` or `tar`.
        program: &'static str,
        /// The system's words.
        detail: String,
    },
    /// The program failed; what it printed on its standard error.
    #[error("{0}")]
    Failed(String),
    /// What to export is not a full commit id.
    #[error("{0:?} is not a commit id")]
    NotCommit(String),
    /// `git archive` gave no output to unpack.
    #[error("git archive gave no output")]
    NoArchive,
    /// `git archive` could not be waited for.
    #[error("git archive did not finish: {detail}")]
    Unfinished {
        /// The system's words.
        detail: String,
    },
}

impl GitError {
    fn run(program: &'static str) -> impl FnOnce(std::io::Error) -> GitError {
        move |e| GitError::Run {
            program,
            detail: e.to_string(),
        }
    }
}

impl From<heartwood_sandbox::SandboxError> for GitError {
    fn from(e: heartwood_sandbox::SandboxError) -> Self {
        GitError::Sandbox {
            detail: e.to_string(),
        }
    }
}

/// A Git work tree the project lives in.
#[derive(Debug, Clone)]
pub(crate) struct Git {
    root: PathBuf,
    /// What the confined `git` must see besides the project: the work tree's top and a linked
    /// work tree's repository, when they are outside the project.
    reached: Vec<PathBuf>,
    /// Where the project sits inside the work tree (`""` at the top, else ending in `/`).
    pub(crate) prefix: String,
}

impl Git {
    /// The repository the project is in, if it is in one and `git` can read it.
    pub(crate) fn detect(root: &Path) -> Option<Git> {
        let mut git = Git {
            root: root.to_owned(),
            reached: repository_places(root),
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
    pub(crate) fn run(&self, args: &[&str]) -> Result<Vec<u8>, GitError> {
        let out = self.command(args)?.output().map_err(GitError::run("git"))?;
        if out.status.success() {
            Ok(out.stdout)
        } else {
            Err(failed(&out.stderr))
        }
    }

    /// Writes the files of `commit` into the empty folder `into` (`git archive` through the
    /// same hardening, unpacked by `tar`). `commit` must be a full object id: nothing a
    /// session records can smuggle an option into the command line.
    pub(crate) fn export(&self, commit: &str, into: &Path) -> Result<(), GitError> {
        let is_object_id = matches!(commit.len(), 40 | 64)
            && commit
                .bytes()
                .all(|b| b.is_ascii_hexdigit() && !b.is_ascii_uppercase());
        if !is_object_id {
            return Err(GitError::NotCommit(commit.to_owned()));
        }
        let mut archive = self.command(&["archive", "--format=tar", commit])?;
        archive
            .command()
            .stdout(Stdio::piped())
            .stderr(Stdio::piped());
        let mut archive = archive.spawn().map_err(GitError::run("git"))?;
        let tar_input = archive.stdout.take().ok_or(GitError::NoArchive)?;
        let tar = system_program("tar")?;
        let unpacked = Command::new(tar)
            .env_clear()
            .envs(MINIMAL_ENV)
            .args(["-x", "--no-same-owner", "-C"])
            .arg(into)
            .stdin(tar_input)
            .stdout(Stdio::null())
            .output()
            .map_err(GitError::run("tar"))?;
        let archived = archive
            .wait_with_output()
            .map_err(|e| GitError::Unfinished {
                detail: e.to_string(),
            })?;
        if !archived.status.success() {
            return Err(failed(&archived.stderr));
        }
        if !unpacked.status.success() {
            return Err(failed(&unpacked.stderr));
        }
        Ok(())
    }

    fn command(&self, args: &[&str]) -> Result<HostCommand, GitError> {
        let mut all: Vec<&str> = vec![
            "--no-optional-locks",
            "-c",
            "core.fsmonitor=false",
            "-c",
            "core.hooksPath=/dev/null",
            "-c",
            "core.attributesFile=/dev/null",
            "-c",
            "diff.external=",
            "-c",
            "core.pager=cat",
            "-c",
            "core.quotePath=false",
            "-c",
            "protocol.allow=never",
        ];
        all.extend_from_slice(args);
        let mut command = HostCommand::new("git", &all, &self.root, &self.reached)?;
        command
            .command()
            .env("GIT_CONFIG_NOSYSTEM", "1")
            .env("GIT_CONFIG_GLOBAL", "/dev/null")
            .env("GIT_ATTR_NOSYSTEM", "1")
            .env("GIT_TERMINAL_PROMPT", "0")
            .env("GIT_OPTIONAL_LOCKS", "0");
        Ok(command)
    }
}

/// A failed program's complaint, as it printed it.
fn failed(stderr: &[u8]) -> GitError {
    GitError::Failed(String::from_utf8_lossy(stderr).trim().to_owned())
}

/// The places outside `root` that Git reads for a project inside a work tree: the nearest
/// ancestor holding `.git`, and for a linked work tree or submodule (a `.git` file naming its
/// `gitdir:`) that directory and the repository it belongs to. Found by reading the files, not
/// by running anything.
fn repository_places(root: &Path) -> Vec<PathBuf> {
    let Some(top) = root
        .ancestors()
        .find(|dir| std::fs::symlink_metadata(dir.join(".git")).is_ok())
    else {
        return Vec::new();
    };
    let mut places = Vec::new();
    if top != root {
        places.push(top.to_owned());
    }
    let dot_git = top.join(".git");
    if let Ok(text) = std::fs::read_to_string(&dot_git)
        && let Some(gitdir) = text.trim().strip_prefix("gitdir:")
    {
        let gitdir = top.join(gitdir.trim());
        // A linked work tree's directory sits in its repository's `worktrees/`; the repository
        // (its objects and refs) is named by `commondir`.
        let common = std::fs::read_to_string(gitdir.join("commondir"))
            .ok()
            .map(|c| gitdir.join(c.trim()));
        places.extend(common.into_iter().chain(std::iter::once(gitdir)));
    }
    places.retain(|p| p.is_dir() && !p.starts_with(root));
    places
}

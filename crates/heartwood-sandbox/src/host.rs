//! The programs Heartwood itself runs over project content (`git` for diffs and changes, the
//! shell's syntax check, Python's parser): found by absolute path in the system's directories,
//! never through `PATH` (a project's virtual environment puts its own `bash` and `git` there),
//! started with a minimal environment, and confined to the read-only sandbox where this machine
//! confines, so configuration or code the project controls (a clean filter, a textconv driver)
//! cannot act on the host even if the caller's own hardening missed it.

use std::os::fd::OwnedFd;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Output, Stdio};

pub use crate::system::{MINIMAL_ENV, SYSTEM_BIN, SYSTEM_PATH, system_program};
use crate::{Sandbox, SandboxError, SandboxLevel, support};

/// A helper program ready to run: configure its arguments' extras, input and output through
/// [`HostCommand::command`], then run it.
#[derive(Debug)]
pub struct HostCommand {
    command: Command,
    confined: bool,
    _filters: Vec<OwnedFd>,
}

impl HostCommand {
    /// `program args` over no project at all (it reads only its input), in `/`.
    pub fn without_project(program: &str, args: &[&str]) -> Result<Self, SandboxError> {
        // The sandbox's project is a system directory it shows read-only anyway, with nothing
        // to look for inside.
        let mut command = HostCommand::in_sandbox(
            program,
            args,
            Path::new("/usr"),
            Sandbox::new(Path::new("/usr")).without_project_state(),
        )?;
        command.command.current_dir("/");
        Ok(command)
    }

    /// `program args`, with `root` as its working directory: inside the read-only sandbox
    /// that sees `root` and `reached` (read-only) where this machine confines, else a plain
    /// process; either way found in the system's directories with [`MINIMAL_ENV`] only.
    pub fn new(
        program: &str,
        args: &[&str],
        root: &Path,
        reached: &[PathBuf],
    ) -> Result<Self, SandboxError> {
        let sandbox = Sandbox::new(root).reaching(reached.iter().map(|d| (d.clone(), false)));
        HostCommand::in_sandbox(program, args, root, sandbox)
    }

    /// `program args` in `root`, inside `sandbox` (with no home) at read-only where this
    /// machine confines.
    fn in_sandbox(
        program: &str,
        args: &[&str],
        root: &Path,
        sandbox: Sandbox,
    ) -> Result<Self, SandboxError> {
        let path = system_program(program)?;
        let path_text = path.to_string_lossy().into_owned();
        let (mut command, confined, filters) = if support().enforcing {
            let sandbox = sandbox.with_home(None);
            let wrapped = sandbox.wrap(SandboxLevel::ReadOnly, &path_text, args)?;
            let mut command = Command::new(&wrapped.program);
            command.args(&wrapped.args);
            (command, true, wrapped.into_filters())
        } else {
            let mut command = Command::new(&path);
            command.args(args);
            (command, false, Vec::new())
        };
        command
            .current_dir(root)
            .env_clear()
            .envs(MINIMAL_ENV)
            .stdin(Stdio::null());
        Ok(HostCommand {
            command,
            confined,
            _filters: filters,
        })
    }

    /// The command, to set input, output and further variables.
    pub fn command(&mut self) -> &mut Command {
        &mut self.command
    }

    /// Whether it runs inside the sandbox.
    pub fn confined(&self) -> bool {
        self.confined
    }

    /// Runs it to the end.
    pub fn output(mut self) -> std::io::Result<Output> {
        self.command.output()
    }

    /// Starts it; the filters are released once it has started.
    pub fn spawn(mut self) -> std::io::Result<Child> {
        self.command.spawn()
    }
}

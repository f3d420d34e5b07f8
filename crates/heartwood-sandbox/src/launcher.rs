//! What runs first inside the sandbox, before the program, where the Landlock helper does not
//! ([`crate::confine`] does the same work itself when the layer is on): the resource limits,
//! and every descriptor above 2 closed; and the network bridge, where commands have one.
//!
//! Why a shell prelude rather than code in Heartwood: bubblewrap passes on every descriptor it
//! inherited without close-on-exec (one Heartwood's own parent left open, say), and closing
//! them between fork and exec would take `unsafe` here. The system's `bash` is already inside
//! the view, its `ulimit` and `exec {fd}>&-` are builtins, and it `exec`s the program, so the
//! program keeps bubblewrap's process and its place as the namespace's first child.

use serde::Serialize;

/// The resource limits every confined process runs under (hard and soft alike), published in
/// `heartwood status`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub struct Limits {
    /// Address space per process, in bytes (the machine's memory by default).
    pub memory_bytes: u64,
    /// Processes and threads of the sandbox's user.
    pub processes: u64,
    /// The largest file a process may write, in bytes.
    pub file_bytes: u64,
    /// The private `/tmp`'s size, in bytes.
    pub tmp_bytes: u64,
    /// The private home's size, in bytes.
    pub home_bytes: u64,
}

impl Default for Limits {
    fn default() -> Self {
        const GIB: u64 = 1 << 30;
        Limits {
            memory_bytes: machine_memory().unwrap_or(16 * GIB),
            processes: 4096,
            file_bytes: 16 * GIB,
            tmp_bytes: 4 * GIB,
            home_bytes: GIB,
        }
    }
}

impl Limits {
    /// The limits in words, as `heartwood status` says them.
    pub fn describe(&self) -> String {
        let gib = |b: u64| format!("{:.1} GiB", b as f64 / f64::from(1u32 << 30));
        format!(
            "memory {} a process, {} processes, files up to {}, /tmp {}, home {}",
            gib(self.memory_bytes),
            self.processes,
            gib(self.file_bytes),
            gib(self.tmp_bytes),
            gib(self.home_bytes)
        )
    }
}

/// The machine's memory, from `/proc/meminfo`.
fn machine_memory() -> Option<u64> {
    let info = std::fs::read_to_string("/proc/meminfo").ok()?;
    let line = info.lines().find(|l| l.starts_with("MemTotal:"))?;
    let kib: u64 = line.split_whitespace().nth(1)?.parse().ok()?;
    kib.checked_mul(1024)
}

/// The prelude `bash -c` runs inside the sandbox; the program and its arguments follow as `$@`.
/// With `limits`, it sets them and closes every descriptor above 2 first (without, the
/// Landlock helper did both before it started the shell). With `bridge`, the first argument
/// is the network bridge's script ([`crate::network`]), started in the background before the
/// program, which starts once the bridge listens (or after two seconds without it: the
/// program then has no network).
pub(crate) fn prelude(limits: Option<&Limits>, bridge: bool) -> String {
    let held = match limits {
        Some(limits) => format!(
            "ulimit -HS -v {memory} && ulimit -HS -u {processes} && ulimit -HS -f {file} || exit 125\n\
             for fd in /proc/self/fd/*; do fd=${{fd##*/}}; if [ \"$fd\" -gt 2 ]; then exec {{fd}}>&-; fi; done\n",
            memory = limits.memory_bytes / 1024,
            processes = limits.processes,
            // bash counts file sizes in 1024-byte blocks.
            file = limits.file_bytes / 1024,
        ),
        None => String::new(),
    };
    let bridge = if bridge {
        "/usr/bin/python3 -I -c \"$1\" </dev/null >/dev/null 2>&1 &\n\
         shift\n\
         i=0; until (: </dev/tcp/127.0.0.1/3128) 2>/dev/null || [ $i -ge 100 ]; do i=$((i+1)); sleep 0.02; done\n"
    } else {
        ""
    };
    format!("{held}{bridge}exec \"$@\"")
}

/// The name the prelude runs under (its `$0`), as `ps` inside the sandbox shows it.
pub(crate) const PRELUDE_NAME: &str = "heartwood-sandbox";

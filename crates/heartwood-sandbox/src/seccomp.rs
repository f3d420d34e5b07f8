//! The syscall filter every confined process runs under, installed by bubblewrap
//! (`--add-seccomp-fd`) just before it starts the program.
//!
//! Refused with `EPERM`: the kernel keyring, tracing and reading other processes' memory, BPF,
//! perf events, `userfaultfd`, `io_uring`, taking another process's descriptors, every mount
//! and namespace call (a `clone` asking for a namespace too), module and kexec loading, the
//! clock, swap, reboot, handle-based opens, and the terminal-injection ioctls (`TIOCSTI`,
//! `TIOCLINUX`), and VSOCK sockets (which no network namespace covers). `clone3` answers `ENOSYS`, as in Flatpak's filter, so the C library falls back
//! to `clone`, whose flags a filter can read. A list of refusals on top of namespaces that
//! already hide the host: the view is the allow-list, this narrows the kernel's surface.

// `c_long` and `c_ulong` are `i64` and `u64` on the 64-bit targets this builds for today, but
// not by definition: the conversions stay for the others.
#![allow(clippy::useless_conversion, clippy::unnecessary_cast)]

use std::collections::BTreeMap;
use std::io::{Seek, SeekFrom, Write};
use std::os::fd::OwnedFd;
use std::sync::OnceLock;

use seccompiler::{
    BpfProgram, SeccompAction, SeccompCmpArgLen, SeccompCmpOp, SeccompCondition, SeccompFilter,
    SeccompRule, TargetArch,
};

use crate::SandboxError;

/// Syscalls refused outright.
const REFUSED: &[libc::c_long] = &[
    libc::SYS_add_key,
    libc::SYS_request_key,
    libc::SYS_keyctl,
    libc::SYS_ptrace,
    libc::SYS_process_vm_readv,
    libc::SYS_process_vm_writev,
    libc::SYS_pidfd_getfd,
    libc::SYS_bpf,
    libc::SYS_perf_event_open,
    libc::SYS_userfaultfd,
    libc::SYS_io_uring_setup,
    libc::SYS_io_uring_enter,
    libc::SYS_io_uring_register,
    libc::SYS_mount,
    libc::SYS_umount2,
    libc::SYS_pivot_root,
    libc::SYS_chroot,
    libc::SYS_unshare,
    libc::SYS_setns,
    libc::SYS_move_mount,
    libc::SYS_open_tree,
    libc::SYS_fsopen,
    libc::SYS_fsmount,
    libc::SYS_fsconfig,
    libc::SYS_fspick,
    libc::SYS_mount_setattr,
    libc::SYS_init_module,
    libc::SYS_finit_module,
    libc::SYS_delete_module,
    libc::SYS_kexec_load,
    libc::SYS_kexec_file_load,
    libc::SYS_open_by_handle_at,
    libc::SYS_name_to_handle_at,
    libc::SYS_syslog,
    libc::SYS_acct,
    libc::SYS_quotactl,
    libc::SYS_swapon,
    libc::SYS_swapoff,
    libc::SYS_reboot,
    libc::SYS_settimeofday,
    libc::SYS_clock_settime,
    libc::SYS_clock_adjtime,
    libc::SYS_adjtimex,
    #[cfg(target_arch = "x86_64")]
    libc::SYS_iopl,
    #[cfg(target_arch = "x86_64")]
    libc::SYS_ioperm,
    #[cfg(target_arch = "x86_64")]
    libc::SYS_uselib,
];

/// `clone` flags that ask for a new namespace.
const NAMESPACE_FLAGS: [libc::c_int; 7] = [
    libc::CLONE_NEWUSER,
    libc::CLONE_NEWNS,
    libc::CLONE_NEWPID,
    libc::CLONE_NEWNET,
    libc::CLONE_NEWIPC,
    libc::CLONE_NEWUTS,
    libc::CLONE_NEWCGROUP,
];

/// Terminal ioctls that push input into another process's terminal.
const INJECTING_IOCTLS: [u64; 2] = [libc::TIOCSTI as u64, libc::TIOCLINUX as u64];

/// The two compiled programs (refusals with `EPERM`, `clone3` with `ENOSYS`), in the byte form
/// bubblewrap reads, compiled once per process.
fn programs() -> Result<&'static [Vec<u8>; 2], SandboxError> {
    // Text, not the compiler's error: it is kept for the life of the process and reported on
    // every call, and `SandboxError::Filter` carries it as text (seccompiler's error is not
    // `Clone`).
    static COMPILED: OnceLock<Result<[Vec<u8>; 2], String>> = OnceLock::new();
    COMPILED
        .get_or_init(|| compile().map_err(|e| e.to_string()))
        .as_ref()
        .map_err(|e| SandboxError::Filter(e.clone()))
}

fn arch() -> Result<TargetArch, seccompiler::Error> {
    Ok(TargetArch::try_from(std::env::consts::ARCH)?)
}

fn compile() -> Result<[Vec<u8>; 2], seccompiler::Error> {
    let mut refused: BTreeMap<i64, Vec<SeccompRule>> = REFUSED
        .iter()
        .map(|n| (i64::from(*n), Vec::new()))
        .collect();
    let any_bit = |arg: u8, bits: u64| {
        SeccompCondition::new(
            arg,
            SeccompCmpArgLen::Qword,
            SeccompCmpOp::MaskedEq(bits),
            bits,
        )
        .and_then(|c| SeccompRule::new(vec![c]))
    };
    let clone_rules = NAMESPACE_FLAGS
        .iter()
        .map(|flag| any_bit(0, u64::from(flag.cast_unsigned())))
        .collect::<Result<Vec<_>, _>>()?;
    refused.insert(i64::from(libc::SYS_clone), clone_rules);
    let ioctl_rules = INJECTING_IOCTLS
        .iter()
        .map(|request| {
            SeccompCondition::new(1, SeccompCmpArgLen::Dword, SeccompCmpOp::Eq, *request)
                .and_then(|c| SeccompRule::new(vec![c]))
        })
        .collect::<Result<Vec<_>, _>>()?;
    refused.insert(i64::from(libc::SYS_ioctl), ioctl_rules);
    // VSOCK reaches the hypervisor, whatever the network namespace.
    let vsock = SeccompCondition::new(
        0,
        SeccompCmpArgLen::Dword,
        SeccompCmpOp::Eq,
        u64::from(libc::AF_VSOCK.cast_unsigned()),
    )
    .and_then(|c| SeccompRule::new(vec![c]))?;
    refused.insert(i64::from(libc::SYS_socket), vec![vsock]);
    let refuse = SeccompFilter::new(
        refused,
        SeccompAction::Allow,
        SeccompAction::Errno(libc::EPERM.cast_unsigned()),
        arch()?,
    )?;
    let fall_back = SeccompFilter::new(
        BTreeMap::from([(i64::from(libc::SYS_clone3), Vec::new())]),
        SeccompAction::Allow,
        SeccompAction::Errno(libc::ENOSYS.cast_unsigned()),
        arch()?,
    )?;
    Ok([bytes(refuse.try_into()?), bytes(fall_back.try_into()?)])
}

/// A program as the kernel's `struct sock_filter` array, in this machine's byte order.
fn bytes(program: BpfProgram) -> Vec<u8> {
    let mut out = Vec::with_capacity(program.len() * 8);
    for insn in program {
        out.extend_from_slice(&insn.code.to_ne_bytes());
        out.push(insn.jt);
        out.push(insn.jf);
        out.extend_from_slice(&insn.k.to_ne_bytes());
    }
    out
}

/// The filters as descriptors a child inherits (no close-on-exec), each at its start, for
/// bubblewrap's `--add-seccomp-fd`. Hold them until the child has started.
pub(crate) fn descriptors() -> Result<Vec<OwnedFd>, SandboxError> {
    programs()?
        .iter()
        .map(|program| {
            let fd = rustix::fs::memfd_create("heartwood-seccomp", rustix::fs::MemfdFlags::empty())
                .map_err(std::io::Error::from)?;
            let mut file = std::fs::File::from(fd);
            file.write_all(program)?;
            file.seek(SeekFrom::Start(0))?;
            Ok(OwnedFd::from(file))
        })
        .collect()
}

/// bubblewrap's arguments that install `filters` (from [`descriptors`]).
pub(crate) fn arguments(filters: &[OwnedFd]) -> Vec<std::ffi::OsString> {
    filters
        .iter()
        .flat_map(|fd| {
            [
                "--add-seccomp-fd".into(),
                std::os::fd::AsRawFd::as_raw_fd(fd).to_string().into(),
            ]
        })
        .collect()
}

/// Whether the filters compile for this machine's architecture (for `support`).
pub(crate) fn available() -> Result<(), SandboxError> {
    programs().map(|_| ())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn both_programs_compile_to_whole_instructions() {
        let [refuse, fall_back] = programs().expect("compiles");
        assert!(refuse.len() > 8 * REFUSED.len(), "every refusal has a jump");
        assert_eq!(refuse.len() % 8, 0);
        assert_eq!(fall_back.len() % 8, 0);
    }
}

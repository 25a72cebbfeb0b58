//! The socket filter: what Landlock cannot say about sockets (and a few
//! other calls it does not cover), said with seccomp. Landlock (ABI ≤ 7)
//! rules TCP by port but not UDP, and it does not cover connecting to a
//! named UNIX socket: a child could leak by datagram,
//! or reach the user's D-Bus session bus (which will start any command,
//! unconfined) or Docker's socket (root). The filter refuses, with `EACCES`:
//! - every socket family but IPv4/IPv6 and, when the profile allows it, UNIX
//!   (`socketpair` stays: anonymous pairs reach nothing outside);
//! - without network: every IPv4/IPv6 socket but a TCP stream (which
//!   Landlock then rules by port; an MPTCP or SCTP stream is not TCP to it);
//! - `io_uring`, whose `IORING_OP_SOCKET` makes sockets without `socket(2)`;
//! - without network, `listen` (it binds an ephemeral port past Landlock);
//!   without UNIX sockets, datagram `socketpair`s (they can reach named ones);
//! - `prlimit` on another process, the kernel keyring, group- or
//!   world-writable and setuid/setgid modes, file leases, and (with `EPERM`)
//!   every extended-attribute write (found by attack runs: the host killed through
//!   its file-size limit, a secret read from the user's keyring, the site
//!   database made writable by every user by mode and by ACL);
//! - `clone3` (with `ENOSYS`, so threads and forks fall back to `clone`);
//!   `memfd_create`/`memfd_secret`, `shmget` and `msgget` (with `ENOSYS`:
//!   memory outside every ceiling; runtimes fall back to a file, which the
//!   scratch tmpfs bounds); a nested user namespace (with `EPERM`).
//!
//! A filter that cannot be built or installed fails the spawn: a child never
//! runs with less than its profile says.

use std::collections::BTreeMap;

use seccompiler::{
    BpfProgram, SeccompAction, SeccompCmpArgLen, SeccompCmpOp, SeccompCondition, SeccompFilter,
    SeccompRule,
};

use crate::error::{Error, Result, codes};
use crate::sandbox::profile::Profile;

/// Socket types other than a stream (`type & 0xf`; the rest are flags).
const NON_STREAM_TYPES: [u64; 5] = [
    nix::libc::SOCK_DGRAM as u64,
    nix::libc::SOCK_RAW as u64,
    nix::libc::SOCK_RDM as u64,
    nix::libc::SOCK_SEQPACKET as u64,
    10, // SOCK_PACKET (obsolete, still accepted by the kernel)
];

fn failed(e: impl std::fmt::Display) -> Error {
    Error::new(
        codes::SPAWN_FAILED,
        format!("the socket filter could not be built: {e}"),
    )
}

/// `arg[index] op value` on the low 32 bits (`int` arguments).
fn arg(index: u8, op: SeccompCmpOp, value: u64) -> Result<SeccompCondition> {
    SeccompCondition::new(index, SeccompCmpArgLen::Dword, op, value).map_err(failed)
}

/// A rule: all of `conditions` hold (the rules of one call are alternatives).
fn rule(conditions: Vec<SeccompCondition>) -> Result<SeccompRule> {
    SeccompRule::new(conditions).map_err(failed)
}

/// `rules` compiled into a program that refuses a matching call with `errno`
/// and allows every other.
fn compile(
    rules: BTreeMap<i64, Vec<SeccompRule>>,
    errno: i32,
    arch: seccompiler::TargetArch,
) -> Result<BpfProgram> {
    SeccompFilter::new(
        rules,
        SeccompAction::Allow,
        SeccompAction::Errno(errno as u32),
        arch,
    )
    .map_err(failed)?
    .try_into()
    .map_err(failed)
}

/// The filters for `profile`, compiled in the host (the child only installs
/// them, in order).
pub(crate) fn child_filters(profile: &Profile) -> Result<Vec<BpfProgram>> {
    use SeccompCmpOp::{Eq, MaskedEq, Ne};
    let (inet, inet6, unix) = (
        nix::libc::AF_INET as u64,
        nix::libc::AF_INET6 as u64,
        nix::libc::AF_UNIX as u64,
    );
    let mut other_family = vec![arg(0, Ne, inet)?, arg(0, Ne, inet6)?];
    if profile.unix_sockets {
        other_family.push(arg(0, Ne, unix)?);
    }
    let mut refused = vec![rule(other_family)?];
    if !profile.network {
        let tcp = nix::libc::IPPROTO_TCP as u64;
        for family in [inet, inet6] {
            for kind in NON_STREAM_TYPES {
                refused.push(rule(vec![
                    arg(0, Eq, family)?,
                    arg(1, MaskedEq(0xf), kind)?,
                ])?);
            }
            // A stream of another protocol (MPTCP, SCTP): not TCP to Landlock.
            refused.push(rule(vec![
                arg(0, Eq, family)?,
                arg(2, Ne, 0)?,
                arg(2, Ne, tcp)?,
            ])?);
        }
    }
    // An empty list matches every call.
    let always = Vec::new;
    let mut rules: BTreeMap<i64, Vec<SeccompRule>> = [
        (nix::libc::SYS_socket, refused),
        (nix::libc::SYS_io_uring_setup, always()),
        (nix::libc::SYS_io_uring_enter, always()),
        (nix::libc::SYS_io_uring_register, always()),
        // Another process's limits: a child set the host's RLIMIT_FSIZE to 0
        // and killed it at its next write. Its own (pid 0) stay settable.
        (nix::libc::SYS_prlimit64, vec![rule(vec![arg(0, Ne, 0)?])?]),
        // The user's kernel keyring is not the server's (it read a secret
        // another program of the user had stored there).
        (nix::libc::SYS_keyctl, always()),
        // A lease on a file it may only read (any file its uid owns: for a
        // root host, every system file) stalled the host's writers of that
        // file for the lease-break time, again on every write.
        (
            nix::libc::SYS_fcntl,
            vec![rule(vec![arg(1, Eq, nix::libc::F_SETLEASE as u64)?])?],
        ),
        (nix::libc::SYS_add_key, always()),
        (nix::libc::SYS_request_key, always()),
    ]
    .into_iter()
    .collect();
    if !profile.network {
        // `listen` binds an unbound socket to an ephemeral port itself,
        // without the `bind` Landlock rules: an inbound server on every address.
        rules.insert(nix::libc::SYS_listen, always());
    }
    if !profile.unix_sockets {
        // Only stream and seqpacket pairs, connected to each other for good:
        // an unbound datagram pair can `sendto` (or `connect`) any named
        // socket, and the kernel makes a UNIX `SOCK_RAW` pair a datagram one.
        let mut pairs = Vec::new();
        for kind in NON_STREAM_TYPES {
            if kind != nix::libc::SOCK_SEQPACKET as u64 {
                pairs.push(rule(vec![arg(1, MaskedEq(0xf), kind)?])?);
            }
        }
        rules.insert(nix::libc::SYS_socketpair, pairs);
    }
    // Landlock does not rule a file's mode: a child made the site database
    // writable by every user. Refused: group or other write, setuid, setgid.
    // (Widening read is not: installers in scratch set 0755 and 0644.)
    let widening = |mode_arg: u8| -> Result<Vec<SeccompRule>> {
        [0o020, 0o002, 0o4000, 0o2000]
            .into_iter()
            .map(|bit| rule(vec![arg(mode_arg, MaskedEq(bit), bit)?]))
            .collect()
    };
    #[cfg(target_arch = "x86_64")]
    rules.insert(nix::libc::SYS_chmod, widening(1)?);
    rules.insert(nix::libc::SYS_fchmod, widening(1)?);
    rules.insert(nix::libc::SYS_fchmodat, widening(2)?);
    rules.insert(nix::libc::SYS_fchmodat2, widening(2)?);
    let arch: seccompiler::TargetArch = std::env::consts::ARCH.try_into().map_err(failed)?;
    let program = compile(rules, nix::libc::EACCES, arch)?;
    Ok(vec![
        refuse_x32(program),
        eperm_filter(arch)?,
        enosys_filter(arch)?,
    ])
}

/// Calls refused with `ENOSYS`, as if the kernel lacked them, so callers
/// take their fallback:
/// - `clone3` (the C libraries fall back to `clone`): its flags sit in a
///   structure seccomp cannot read, and `CLONE_INTO_CGROUP` there moved an
///   attack run's child into a cgroup of its choosing past the read-only
///   view (the kernel checks only the permissions of `cgroup.procs`), which
///   would escape a v2 pids ceiling;
/// - `memfd_create` and `memfd_secret`: an attack run held 512 MiB written
///   into memfds past a 256 MiB ceiling (never mapped, it is neither RSS
///   nor `RLIMIT_DATA`); without a memory cgroup nothing else counts it;
/// - System V shared memory and message queues (`shmget`, `msgget`): the
///   same run held 1 GiB of segments (attached a piece at a time) and
///   400 MiB of queued messages, counted by no ceiling either.
fn enosys_filter(arch: seccompiler::TargetArch) -> Result<BpfProgram> {
    let rules: BTreeMap<i64, Vec<SeccompRule>> = [
        nix::libc::SYS_clone3,
        nix::libc::SYS_memfd_create,
        nix::libc::SYS_memfd_secret,
        nix::libc::SYS_shmget,
        nix::libc::SYS_msgget,
    ]
    .into_iter()
    .map(|nr| (nr, Vec::new()))
    .collect();
    compile(rules, nix::libc::ENOSYS, arch)
}

/// `setxattrat` and `removexattrat` (Linux 6.13; one number on every
/// architecture since the tables were unified).
const SYS_SETXATTRAT: i64 = 463;
const SYS_REMOVEXATTRAT: i64 = 466;

/// Refused with `EPERM`:
/// - every extended-attribute write: a POSIX ACL (`system.posix_acl_access`)
///   made the site database writable by every user past the mode rule above
///   (`EPERM`, not `EACCES`, because copying tools such as Python's
///   `shutil.copy2` skip an attribute refused so and go on);
/// - a user namespace of the child's own (`unshare` or `clone` with
///   `CLONE_NEWUSER`): in one, an attack run chrooted away from the host's
///   measure of its scratch, and took fresh IPC namespaces past the limits
///   of one. It is also the kernel's widest surface open to an unprivileged
///   process.
fn eperm_filter(arch: seccompiler::TargetArch) -> Result<BpfProgram> {
    let mut rules: BTreeMap<i64, Vec<SeccompRule>> = [
        nix::libc::SYS_setxattr,
        nix::libc::SYS_lsetxattr,
        nix::libc::SYS_fsetxattr,
        SYS_SETXATTRAT,
        nix::libc::SYS_removexattr,
        nix::libc::SYS_lremovexattr,
        nix::libc::SYS_fremovexattr,
        SYS_REMOVEXATTRAT,
    ]
    .into_iter()
    .map(|call| (call, Vec::new()))
    .collect();
    let newuser = nix::libc::CLONE_NEWUSER as u64;
    // `clone`'s flags are its first argument on every architecture.
    for call in [nix::libc::SYS_unshare, nix::libc::SYS_clone] {
        rules.insert(
            call,
            vec![rule(vec![
                SeccompCondition::new(
                    0,
                    SeccompCmpArgLen::Qword,
                    SeccompCmpOp::MaskedEq(newuser),
                    newuser,
                )
                .map_err(failed)?,
            ])?],
        );
    }
    compile(rules, nix::libc::EPERM, arch)
}

/// On x86_64, the x32 ABI numbers every system call again (with bit 30 set)
/// under the same audit architecture, so a filter keyed by number misses
/// x32's `socket`; `seccompiler` does not check for it. Three instructions
/// in front refuse every x32 call (most kernels disable x32; this one does,
/// so it is not exercised by the tests here).
#[cfg(target_arch = "x86_64")]
fn refuse_x32(program: BpfProgram) -> BpfProgram {
    use seccompiler::sock_filter;
    const X32_SYSCALL_BIT: u32 = 0x4000_0000;
    const SECCOMP_RET_ERRNO: u32 = 0x0005_0000;
    let op = |code: u16, jt: u8, jf: u8, k: u32| sock_filter { code, jt, jf, k };
    let mut out = vec![
        // A = seccomp_data.nr
        op(0x20, 0, 0, 0),
        // if (A & X32_SYSCALL_BIT) fall through to the refusal, else skip it
        op(0x45, 0, 1, X32_SYSCALL_BIT),
        op(0x06, 0, 0, SECCOMP_RET_ERRNO | nix::libc::EACCES as u32),
    ];
    out.extend(program);
    out
}

#[cfg(not(target_arch = "x86_64"))]
fn refuse_x32(program: BpfProgram) -> BpfProgram {
    program
}

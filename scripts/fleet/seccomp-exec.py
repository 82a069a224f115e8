#!/usr/bin/python3
"""Load seccomp filters the way systemd would for a unit's options, then exec a command.

Usage: seccomp-exec.py [--syscall-filter "GROUP|NAME ..."] [--errno NAME] [--native]
         [--address-families "AF_X ..."] [--mdwe] [--lock-personality]
         [--restrict-realtime] [--deny "NAME ..."] [--env NAME=VALUE]... -- CMD [ARG...]

The syscall groups are expanded with the installed `systemd-analyze syscall-filter`, so
the sets are systemd's own tables, not a copy. Each option becomes one filter, as
systemd loads one per setting; the kernel applies the strictest verdict of all. The
environment of CMD is exactly the --env pairs (as `env -i`). Needs no_new_privs or
CAP_SYS_ADMIN, like any seccomp filter.
"""
import argparse
import errno
import os
import socket
import subprocess
import sys

import seccomp


def die(message):
    print("seccomp-exec: " + message, file=sys.stderr)
    sys.exit(2)


def expand(names, seen=None):
    """Every syscall in names, groups (@x) expanded recursively through systemd-analyze."""
    seen = set() if seen is None else seen
    syscalls = set()
    for name in names:
        if not name.startswith("@"):
            syscalls.add(name)
            continue
        if name in seen:
            continue
        seen.add(name)
        out = subprocess.run(["systemd-analyze", "syscall-filter", "--no-pager", name],
                             check=True, capture_output=True, text=True, timeout=30).stdout
        members = [line.strip() for line in out.splitlines()
                   if line.startswith(" ") and not line.strip().startswith("#") and line.strip()]
        if not members:
            die(f"systemd-analyze knows no syscall group {name}")
        syscalls |= expand(members, seen)
    return syscalls


def add_existing(f, action, name, *args):
    """Add a rule for a syscall this architecture has; systemd skips the others too."""
    try:
        seccomp.resolve_syscall(seccomp.Arch.NATIVE, name)
    except (ValueError, RuntimeError):
        return
    try:
        f.add_rule(action, name, *args)
    except (ValueError, RuntimeError, OSError):
        pass


def family_number(name):
    value = getattr(socket, name, None)
    if value is None:
        die(f"unknown address family {name}")
    return int(value)


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--syscall-filter", default="")
    parser.add_argument("--errno", default="")
    parser.add_argument("--native", action="store_true")
    parser.add_argument("--address-families", default="")
    parser.add_argument("--mdwe", action="store_true")
    parser.add_argument("--lock-personality", action="store_true")
    parser.add_argument("--restrict-realtime", action="store_true")
    parser.add_argument("--restrict-suid-sgid", action="store_true")
    parser.add_argument("--deny", default="")
    parser.add_argument("--env", action="append", default=[])
    parser.add_argument("command", nargs=argparse.REMAINDER)
    opts = parser.parse_args()
    command = opts.command[1:] if opts.command[:1] == ["--"] else opts.command
    if not command:
        die("no command")

    filters = []
    allow = seccomp.ALLOW
    # Kill on a foreign architecture: SystemCallArchitectures=native.
    badarch = seccomp.KILL_PROCESS if opts.native else seccomp.ALLOW

    if opts.syscall_filter:
        code = getattr(errno, opts.errno) if opts.errno else None
        default = seccomp.ERRNO(code) if code is not None else seccomp.KILL_PROCESS
        f = seccomp.SyscallFilter(defaction=default)
        f.set_attr(seccomp.Attr.ACT_BADARCH, badarch)
        for name in sorted(expand(opts.syscall_filter.split())):
            add_existing(f, allow, name)
        filters.append(f)

    def permissive():
        f = seccomp.SyscallFilter(defaction=allow)
        f.set_attr(seccomp.Attr.ACT_BADARCH, badarch)
        return f

    if opts.address_families:
        # RestrictAddressFamilies= (allow list): socket() of any other family fails
        # with EAFNOSUPPORT.
        allowed = {family_number(n) for n in opts.address_families.split()}
        f = permissive()
        af_max = 64
        for family in range(af_max):
            if family not in allowed:
                add_existing(f, seccomp.ERRNO(errno.EAFNOSUPPORT), "socket", seccomp.Arg(0, seccomp.EQ, family))
        add_existing(f, seccomp.ERRNO(errno.EAFNOSUPPORT), "socket", seccomp.Arg(0, seccomp.GE, af_max))
        filters.append(f)

    if opts.mdwe:
        # MemoryDenyWriteExecute=: no mapping both writable and executable, no making
        # memory executable later, no executable SysV shared memory.
        prot_exec, prot_write, shm_exec = 0x4, 0x2, 0o100000
        f = permissive()
        eperm = seccomp.ERRNO(errno.EPERM)
        for name in ("mmap", "mmap2"):
            add_existing(f, eperm, name, seccomp.Arg(2, seccomp.MASKED_EQ, prot_exec | prot_write, prot_exec | prot_write))
        for name in ("mprotect", "pkey_mprotect"):
            add_existing(f, eperm, name, seccomp.Arg(2, seccomp.MASKED_EQ, prot_exec, prot_exec))
        add_existing(f, eperm, "shmat", seccomp.Arg(2, seccomp.MASKED_EQ, shm_exec, shm_exec))
        filters.append(f)

    if opts.lock_personality:
        # LockPersonality=: personality() may only query (0xffffffff) or keep PER_LINUX.
        f = permissive()
        per_linux, query = 0, 0xFFFFFFFF
        add_existing(f, seccomp.ERRNO(errno.EPERM), "personality",
                     seccomp.Arg(0, seccomp.NE, per_linux), seccomp.Arg(0, seccomp.NE, query))
        filters.append(f)

    if opts.restrict_realtime:
        # RestrictRealtime=: no SCHED_FIFO, SCHED_RR or SCHED_DEADLINE.
        f = permissive()
        for policy in (1, 2, 6):
            add_existing(f, seccomp.ERRNO(errno.EPERM), "sched_setscheduler", seccomp.Arg(1, seccomp.EQ, policy))
        add_existing(f, seccomp.ERRNO(errno.EPERM), "sched_setattr")
        filters.append(f)

    if opts.restrict_suid_sgid:
        # RestrictSUIDSGID=, as systemd builds it: no chmod or create with S_ISUID or
        # S_ISGID, and openat2() answered with ENOSYS, since its mode sits in a struct
        # a filter cannot read. Not set in the unit; fleet-check.sh shows its effect.
        f = permissive()
        eperm = seccomp.ERRNO(errno.EPERM)
        suid_sgid, o_creat = 0o6000, 0o100
        for bit in (0o4000, 0o2000):
            add_existing(f, eperm, "chmod", seccomp.Arg(1, seccomp.MASKED_EQ, bit, bit))
            add_existing(f, eperm, "fchmod", seccomp.Arg(1, seccomp.MASKED_EQ, bit, bit))
            add_existing(f, eperm, "fchmodat", seccomp.Arg(2, seccomp.MASKED_EQ, bit, bit))
            add_existing(f, eperm, "fchmodat2", seccomp.Arg(2, seccomp.MASKED_EQ, bit, bit))
            add_existing(f, eperm, "creat", seccomp.Arg(1, seccomp.MASKED_EQ, bit, bit))
            add_existing(f, eperm, "open", seccomp.Arg(1, seccomp.MASKED_EQ, o_creat, o_creat),
                         seccomp.Arg(2, seccomp.MASKED_EQ, bit, bit))
            add_existing(f, eperm, "openat", seccomp.Arg(2, seccomp.MASKED_EQ, o_creat, o_creat),
                         seccomp.Arg(3, seccomp.MASKED_EQ, bit, bit))
            add_existing(f, eperm, "mknod", seccomp.Arg(1, seccomp.MASKED_EQ, bit, bit))
            add_existing(f, eperm, "mknodat", seccomp.Arg(2, seccomp.MASKED_EQ, bit, bit))
        del suid_sgid
        add_existing(f, seccomp.ERRNO(errno.ENOSYS), "openat2")
        filters.append(f)

    if opts.deny:
        f = permissive()
        for name in opts.deny.split():
            add_existing(f, seccomp.ERRNO(errno.EPERM), name)
        filters.append(f)

    env = {}
    for pair in opts.env:
        name, sep, value = pair.partition("=")
        if not sep or not name:
            die(f"--env wants NAME=VALUE, got {pair!r}")
        env[name] = value
    path = command[0]
    if "/" not in path:
        die(f"command must be an absolute path, as in ExecStart=: {path}")
    # The allow list goes last: seccomp(2) itself is not in @system-service, so once it
    # is loaded no further filter could be.
    for f in filters[1:] + filters[:1] if opts.syscall_filter else filters:
        f.load()
    os.execve(path, command, env)


if __name__ == "__main__":
    main()

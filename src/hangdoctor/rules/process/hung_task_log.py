"""HD150 process.blocked_io: The kernel's hung-task detector saw a task stuck in uninterruptible
sleep (state D): it waits for storage or a driver that does not answer, and cannot even be
killed."""

from __future__ import annotations

import re
from collections.abc import Iterable

from hangdoctor.analysis.job import JobView
from hangdoctor.analysis.logs import LogKind, LogMatch, scan
from hangdoctor.i18n import N_, _
from hangdoctor.rules.base import Rule
from hangdoctor.rules.confidence import Confidence
from hangdoctor.rules.finding import Culprit, Finding, Severity
from hangdoctor.rules.log_helpers import cite, kernel_lines
from hangdoctor.taxonomy import Category

_FRAME = re.compile(r"(?:\]|\s)\s*(?:\? )?([A-Za-z_][\w.]*)\+0x[0-9a-f]+/0x[0-9a-f]+")
_GENERIC_FRAMES = re.compile(
    r"^(?:__?schedule\w*|schedule\w*|io_schedule\w*|__?mutex_lock\w*|mutex_lock\w*|"
    r"rwsem_down\w*|down_\w+|wait_for_completion\w*|__wait_on_\w+|wait_on_\w+|bit_wait\w*|"
    r"out_of_line_wait_on_bit\w*|__x64_sys_\w+|do_syscall_64|entry_SYSCALL\w*|ret_from_fork\w*|"
    r"kthread|worker_thread|process_one_work|__switch_to\w*|\w*_slowpath|"
    r"finish_task_switch\w*|rwsem\w*|__lock\w*|lock_\w+|do_\w+|vfs_\w+|ksys_\w+|"
    r"__do_sys\w*|path_\w+|filemap_\w+|folio_\w+|__folio_\w+)$"
)
_SUBSYSTEMS = (
    ("nfs", "NFS"),
    ("rpc_", N_("NFS (SUNRPC)")),
    ("fuse", N_("a FUSE filesystem (s3fs, gcsfuse, blobfuse, sshfs...)")),
    ("ll_", "Lustre"),
    ("lustre", "Lustre"),
    ("ceph", "CephFS"),
    ("gpfs", "GPFS"),
    ("jbd2", N_("the local ext4 journal")),
    ("ext4", N_("the local ext4 disk")),
    ("xfs", N_("the local XFS disk")),
    ("btrfs", N_("the local btrfs disk")),
    ("blk_", N_("a block device")),
    ("_nv", N_("the NVIDIA driver")),
    ("nvidia", N_("the NVIDIA driver")),
    ("uvm", N_("the NVIDIA driver (UVM)")),
)
_JOB_TASK = re.compile(
    r"^(?:python|pt_|torchrun|accelerate|deepspeed|ray|train|pytorch)", re.IGNORECASE
)


def _blocked_in(lines: tuple[str, ...], index: int) -> str | None:
    """The subsystem a hung task waits in, from the call trace printed after its line (in the
    report's language)."""
    for line in lines[index + 1 : index + 40]:
        if "blocked for more than" in line:
            break
        for name in _FRAME.findall(line):
            if _GENERIC_FRAMES.match(name):
                continue
            for prefix, subsystem in _SUBSYSTEMS:
                if name.startswith(prefix) or f"_{prefix}" in name:
                    return _(subsystem)
    return None


class HungTaskInKernelLog(Rule):
    """a task was blocked in the kernel (hung task)

    Fires when: the kernel's hung-task detector reports a task blocked for more than N s (state D);
    says what it waits in (NFS, FUSE, Lustre, a local disk, the NVIDIA driver)

    Why: A task in uninterruptible sleep (state D) waits inside the kernel for storage or a driver
    (NFS, FUSE, Lustre, a failing disk, the NVIDIA driver) that does not answer. It cannot be
    interrupted or even killed until the I/O completes, so a training job reading from such a mount
    stalls and survives SIGKILL.

    Instead: Read training data from local disk (copy it to local NVMe first, or use a local cache)
    instead of a network mount; for NFS check the server and the mount options (`hard`/`soft`,
    `timeo`); fix or remount the storage, or reboot the node, to free a task in state D.
    """

    id = "HD150"
    category = Category.PROCESS_BLOCKED_IO
    reads = "logs"
    specificity = 60

    def check(self, job: JobView) -> Iterable[Finding]:
        kernel = kernel_lines(job)
        hung = [m for m in scan(kernel) if m.kind == LogKind.HUNG_TASK]
        if not hung:
            return
        tasks: dict[int, LogMatch] = {}
        for match in hung:
            tasks.setdefault(match.pids[0], match)
        first = next(
            (m for m in tasks.values() if _JOB_TASK.match(m.fields["comm"])),
            next(iter(tasks.values())),
        )
        comm, pid = first.fields["comm"], first.pids[0]
        where = _blocked_in(kernel, first.index)
        job_task = bool(_JOB_TASK.match(comm))
        seconds = first.fields["seconds"]
        title = (
            _(
                "Task {comm} (pid {pid}) was blocked in the kernel for more than {seconds} s, "
                "in {where}",
                comm=comm,
                pid=pid,
                seconds=seconds,
                where=where,
            )
            if where
            else _(
                "Task {comm} (pid {pid}) was blocked in the kernel for more than {seconds} s",
                comm=comm,
                pid=pid,
                seconds=seconds,
            )
        )
        others = [m for m in tasks.values() if m is not first]
        evidence = cite([first, *others], "kernel log", limit=4)
        if others:
            evidence.append(_("{count} tasks were reported blocked in all", count=len(tasks)))
        yield self.finding(
            severity=Severity.ERROR if job_task else Severity.WARNING,
            confidence=Confidence.PROBABLE if job_task else Confidence.POSSIBLE,
            title=title,
            explanation=_(
                "The task sat in uninterruptible sleep (state D), waiting inside the "
                "kernel for storage or a driver that did not answer ({where}); such a task "
                "cannot be killed until the I/O completes.",
                where=where,
            )
            if where
            else _(
                "The task sat in uninterruptible sleep (state D), waiting inside the "
                "kernel for storage or a driver that did not answer; such a task cannot be "
                "killed until the I/O completes."
            ),
            culprit=Culprit(pid=pid, thread=comm),
            evidence=tuple(evidence),
            fixes=(
                _(
                    "While it hangs, see where: `sudo cat /proc/PID/stack`, and `mount` for the "
                    "network filesystem (NFS, FUSE, Lustre) it reads."
                ),
                _(
                    "Read training data from local disk (copy it to local NVMe first, or use a "
                    "local cache) instead of a network mount; for NFS check the server and the "
                    "mount options (hard/soft, timeo)."
                ),
                _(
                    "A task in state D survives SIGKILL: fix or remount the storage, or reboot the "
                    "node."
                ),
            ),
        )

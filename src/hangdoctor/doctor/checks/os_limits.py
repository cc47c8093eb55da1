"""OS limits: memory maps, listen backlog, open files, locked memory, /dev/shm, swap, ptrace."""

from __future__ import annotations

from collections.abc import Iterator

from hangdoctor.doctor.check import Check, Example
from hangdoctor.doctor.examples import node
from hangdoctor.doctor.facts import UNLIMITED, Facts
from hangdoctor.doctor.result import CheckResult
from hangdoctor.doctor.units import GIB, MIB, size
from hangdoctor.i18n import _

#: Linux's default vm.max_map_count (DEFAULT_MAX_MAP_COUNT in include/linux/mm.h).
DEFAULT_MAX_MAP_COUNT = 65530
#: What memory-map-heavy jobs are usually given (the value Elasticsearch and many ML images set).
RAISED_MAX_MAP_COUNT = 262144
MIN_SOMAXCONN = 1024
MIN_NOFILE = 4096
#: /dev/shm per DataLoader worker: each holds `prefetch_factor` (2) batches in shared memory;
#: 256 MiB covers two 128 MiB batches, 64 MiB is the least that holds a modest one.
SHM_PER_WORKER_WANTED = 256 * MIB
SHM_PER_WORKER_MINIMUM = 64 * MIB
SHM_FLOOR = 256 * MIB
PTRACE_SOURCE = "https://www.kernel.org/doc/html/latest/admin-guide/LSM/Yama.html"


class MaxMapCount(Check):
    """`vm.max_map_count` (the kernel default 65530 is `info`, lower is `warn`)

    Why: Every memory-mapped file, shared-memory tensor passed by a DataLoader worker and large
    allocation is one memory map. At `vm.max_map_count` mmap fails with ENOMEM: workers die or the
    loader waits for a batch that never comes.

    Instead: Raise the limit on nodes that run large jobs (`sudo sysctl -w
    vm.max_map_count=1048576`, persistently in `/etc/sysctl.d/`).
    """

    id = "DR201"
    area = "os_limits"
    fires_on = (
        Example("below the kernel default", lambda: node(limits={"max_map_count": 30000}), "warn"),
    )
    quiet_on = (
        Example("raised", lambda: node(limits={"max_map_count": 262144}), "ok"),
        Example("the kernel default", lambda: node(limits={"max_map_count": 65530}), "info"),
        Example("unreadable", lambda: node(limits={"max_map_count": None}), "skipped"),
    )

    def check(self, facts: Facts) -> Iterator[CheckResult]:
        title = "vm.max_map_count"
        value = facts.limits.max_map_count
        why = _(
            "Every memory-mapped file, shared-memory tensor passed by a DataLoader worker and "
            "large allocation is one mapping; at the limit mmap fails with ENOMEM and workers "
            "die or the loader waits for a batch that never comes."
        )
        fix = f"sudo sysctl -w vm.max_map_count={RAISED_MAX_MAP_COUNT}"
        if value is None:
            yield self.result("skipped", title, found=_("could not be read"))
        elif value < DEFAULT_MAX_MAP_COUNT:
            yield self.result(
                "warn",
                title,
                found=str(value),
                wanted=f">= {RAISED_MAX_MAP_COUNT}",
                why=why,
                fix=fix,
            )
        elif value < RAISED_MAX_MAP_COUNT:
            # The kernel default: enough for most jobs, so not a warning on every stock machine.
            yield self.result(
                "info",
                title,
                found=_("{value} (the kernel default)", value=value),
                wanted=_(
                    ">= {count} for jobs that mmap many files or shards",
                    count=RAISED_MAX_MAP_COUNT,
                ),
                why=why,
                fix=fix,
            )
        else:
            yield self.result("ok", title, found=str(value))


class ListenBacklog(Check):
    """`net.core.somaxconn` (< 1024 `warn`, < WORLD_SIZE `problem`)

    Why: Rank 0's TCPStore accepts every rank's connection at start-up. Beyond the listen backlog
    (`net.core.somaxconn`) connections are dropped, and ranks wait in `init_process_group` until the
    rendezvous times out, more often the more ranks a job has.

    Instead: Raise the backlog above the job's world size (`sudo sysctl -w net.core.somaxconn=4096`,
    persistently in `/etc/sysctl.d/`).
    """

    id = "DR202"
    area = "os_limits"
    fires_on = (
        Example(
            "128, a job of 512 ranks",
            lambda: node(limits={"somaxconn": 128, "world_size": 512}),
            "problem",
        ),
        Example("128", lambda: node(limits={"somaxconn": 128}), "warn"),
    )
    quiet_on = (
        Example("4096", lambda: node(limits={"somaxconn": 4096, "world_size": 512}), "ok"),
        Example("unreadable", lambda: node(limits={"somaxconn": None}), "skipped"),
    )

    def check(self, facts: Facts) -> Iterator[CheckResult]:
        title = "net.core.somaxconn"
        value, world = facts.limits.somaxconn, facts.limits.world_size
        why = _(
            "Rank 0's TCPStore accepts every rank's connection at start-up; beyond the listen "
            "backlog, connections are dropped and ranks wait in init_process_group until the "
            "rendezvous times out."
        )
        fix = "sudo sysctl -w net.core.somaxconn=4096"
        if value is None:
            yield self.result("skipped", title, found=_("could not be read"))
        elif world is not None and value < world:
            yield self.result(
                "problem",
                title,
                found=str(value),
                wanted=f">= WORLD_SIZE ({world})",
                why=why,
                fix=fix,
            )
        elif value < MIN_SOMAXCONN:
            yield self.result(
                "warn", title, found=str(value), wanted=f">= {MIN_SOMAXCONN}", why=why, fix=fix
            )
        else:
            yield self.result("ok", title, found=str(value))


class OpenFiles(Check):
    """open files, `ulimit -n` (< 4096 `warn`)

    Why: DataLoader workers pass tensors to the trainer as file descriptors, and NCCL opens sockets
    per peer. With a low open-files limit the loader fails with `received 0 items of ancdata` or
    `Too many open files`, and collectives fail to connect.

    Instead: Raise the limit before launching (`ulimit -n 65536`; persistently `* soft nofile 65536`
    in `/etc/security/limits.conf`; Docker `--ulimit nofile=65536:65536`), or use
    `torch.multiprocessing.set_sharing_strategy("file_system")`.
    """

    id = "DR203"
    area = "os_limits"
    fires_on = (
        Example("1024", lambda: node(limits={"nofile_soft": 1024, "nofile_hard": 4096}), "warn"),
    )
    quiet_on = (
        Example("4096", lambda: node(limits={"nofile_soft": 4096}), "ok"),
        Example("unlimited", lambda: node(limits={"nofile_soft": UNLIMITED}), "ok"),
        Example("unreadable", lambda: node(limits={"nofile_soft": None}), "skipped"),
    )

    def check(self, facts: Facts) -> Iterator[CheckResult]:
        title = _("Open files (ulimit -n)")
        soft, hard = facts.limits.nofile_soft, facts.limits.nofile_hard
        if soft is None:
            yield self.result("skipped", title, found=_("could not be read"))
            return
        if soft == UNLIMITED or soft >= MIN_NOFILE:
            yield self.result("ok", title, found=_("unlimited") if soft == UNLIMITED else str(soft))
            return
        raise_to = hard if hard is not None and hard != UNLIMITED and hard >= MIN_NOFILE else 65536
        hard_text = _("unlimited") if hard == UNLIMITED else str(hard)
        yield self.result(
            "warn",
            title,
            found=_("{soft} (hard {hard})", soft=soft, hard=hard_text),
            wanted=f">= {MIN_NOFILE}",
            why=_(
                "DataLoader workers pass tensors as file descriptors; when they run out, "
                "the loader fails with `received 0 items of ancdata` or `Too many open "
                "files`, and NCCL opens sockets per peer."
            ),
            fix=_(
                "ulimit -n {limit}   (persistently: `* soft nofile {limit}` in "
                "/etc/security/limits.conf; Docker: `--ulimit nofile=65536:65536`)",
                limit=raise_to,
            ),
        )


class LockedMemory(Check):
    """locked memory, `ulimit -l` (`warn` when RDMA devices exist and it is not unlimited)

    Why: RDMA transports (InfiniBand, RoCE) pin their communication buffers in memory. With a small
    locked-memory limit NCCL's IB transport fails to register memory and falls back to slower paths
    or stalls at start-up.

    Instead: Allow unlimited locked memory where RDMA devices exist (`ulimit -l unlimited`;
    persistently `* - memlock unlimited` in `/etc/security/limits.conf`; Docker `--ulimit
    memlock=-1:-1`).
    """

    id = "DR204"
    area = "os_limits"
    fires_on = (
        Example(
            "8 MiB with an InfiniBand device",
            lambda: node(limits={"memlock_soft": 8 * MIB, "rdma_devices": ("mlx5_0",)}),
            "warn",
        ),
    )
    quiet_on = (
        Example("unlimited", lambda: node(limits={"memlock_soft": UNLIMITED}), "ok"),
        Example("8 MiB without RDMA", lambda: node(limits={"memlock_soft": 8 * MIB}), "info"),
        Example("unreadable", lambda: node(limits={"memlock_soft": None}), "skipped"),
    )

    def check(self, facts: Facts) -> Iterator[CheckResult]:
        title = _("Locked memory (ulimit -l)")
        soft, rdma = facts.limits.memlock_soft, facts.limits.rdma_devices
        if soft is None:
            yield self.result("skipped", title, found=_("could not be read"))
            return
        found = size(soft)
        why = _(
            "RDMA (InfiniBand, RoCE) pins communication buffers; with a small limit NCCL's IB "
            "transport fails to register memory and falls back or stalls at start-up."
        )
        fix = _(
            "ulimit -l unlimited   (persistently: `* - memlock unlimited` in "
            "/etc/security/limits.conf; Docker: `--ulimit memlock=-1:-1`)"
        )
        if soft == UNLIMITED:
            yield self.result("ok", title, found=found)
        elif rdma:
            yield self.result(
                "warn",
                title,
                found=found,
                wanted=_("unlimited"),
                why=why + " " + _("RDMA devices here: {devices}.", devices=", ".join(rdma)),
                fix=fix,
            )
        else:
            yield self.result(
                "info",
                title,
                found=found,
                wanted=_("unlimited where RDMA is used (no RDMA device here)"),
                why=why,
                fix=fix,
            )


def _shm_node(total_mib: int, free_mib: int | None = None, workers: int = 8) -> Facts:
    free = total_mib if free_mib is None else free_mib
    return node(
        limits={"shm_total_bytes": total_mib * MIB, "shm_free_bytes": free * MIB},
        dataloader_workers=workers,
    )


class SharedMemory(Check):
    """/dev/shm free space against DataLoader workers (256 MiB each wanted, 64 MiB each minimum, 256
    MiB floor)

    Why: Each DataLoader worker hands its batches to the trainer through `/dev/shm`. When it fills,
    a worker dies of SIGBUS (`insufficient shared memory`) or blocks, and the trainer waits for a
    batch that never comes. Docker's default is 64 MiB.

    Instead: Give the job shared memory for its workers (Docker `--ipc=host` or `--shm-size=16g`;
    Kubernetes an `emptyDir` with `medium: Memory` at `/dev/shm`; host `sudo mount -o
    remount,size=16G /dev/shm`), or use fewer workers.
    """

    id = "DR205"
    area = "os_limits"
    fires_on = (
        Example("Docker's default 64 MiB, 8 workers", lambda: _shm_node(64), "problem"),
        Example(
            "64 MiB without workers: under the floor", lambda: _shm_node(64, workers=0), "problem"
        ),
        Example(
            "1 GiB for 8 workers: a modest batch each, not two large ones",
            lambda: _shm_node(1024),
            "warn",
        ),
        Example("32 GiB, nearly full", lambda: _shm_node(32 * 1024, free_mib=10), "problem"),
        Example("no /dev/shm", lambda: node(limits={"shm_total_bytes": None}), "warn"),
    )
    quiet_on = (Example("4 GiB for 8 workers", lambda: _shm_node(4096), "ok"),)

    def check(self, facts: Facts) -> Iterator[CheckResult]:
        title = _("/dev/shm size")
        limits, workers = facts.limits, facts.dataloader_workers
        total = limits.shm_total_bytes
        if total is None:
            yield self.result(
                "warn",
                title,
                found=_("no /dev/shm"),
                wanted=_("a tmpfs on /dev/shm"),
                why=_("DataLoader workers pass batches through shared memory in /dev/shm."),
                fix=_(
                    "Docker: `--ipc=host` or `--shm-size=16g`; Kubernetes: an emptyDir with "
                    "`medium: Memory` mounted at /dev/shm"
                ),
            )
            return
        free = limits.shm_free_bytes if limits.shm_free_bytes is not None else total
        wanted_bytes = max(SHM_FLOOR, workers * SHM_PER_WORKER_WANTED)
        minimum = max(SHM_FLOOR, workers * SHM_PER_WORKER_MINIMUM)
        found = _("{total} ({free} free)", total=size(total), free=size(free))
        wanted = _(
            ">= {size} for {workers} DataLoader workers", size=size(wanted_bytes), workers=workers
        )
        why = _(
            "Each DataLoader worker hands its batches to the trainer through /dev/shm; when "
            "it fills, a worker dies of SIGBUS (`insufficient shared memory`) or blocks, and "
            "the trainer waits for a batch that never comes. Docker's default is 64 MiB."
        )
        gib = max(1, -(-wanted_bytes // GIB))
        fix = _(
            "Docker: `docker run --ipc=host ...` or `--shm-size={gib}g`; Kubernetes: mount "
            "an emptyDir with `medium: Memory` at /dev/shm; host: "
            "`sudo mount -o remount,size={gib}G /dev/shm`",
            gib=gib,
        )
        if free < minimum:
            yield self.result("problem", title, found=found, wanted=wanted, why=why, fix=fix)
        elif free < wanted_bytes:
            yield self.result("warn", title, found=found, wanted=wanted, why=why, fix=fix)
        else:
            yield self.result("ok", title, found=found, wanted=wanted)


class Swap(Check):
    """swap (heavy swapping `warn`)

    Why: A training job that swaps slows down by orders of magnitude and looks hung, and the peers
    of the slow rank time out in their collectives. Without swap, host memory exhaustion ends in the
    OOM killer instead: a rank or worker disappears and its peers wait.

    Instead: Free the memory before a job starts (`ps aux --sort=-rss | head` shows what uses it),
    or move the job to a node with room; `sudo swapoff -a && sudo swapon -a` empties swap once
    memory is free.
    """

    id = "DR206"
    area = "os_limits"
    fires_on = (
        Example(
            "8 GiB of 16 GiB swapped out",
            lambda: node(limits={"swap_total_bytes": 16 * GIB, "swap_used_bytes": 8 * GIB}),
            "warn",
        ),
    )
    quiet_on = (
        Example("no swap", lambda: node(limits={"swap_total_bytes": 0}), "info"),
        Example(
            "a little swap in use",
            lambda: node(limits={"swap_total_bytes": 16 * GIB, "swap_used_bytes": 200 * MIB}),
            "ok",
        ),
        Example("unreadable", lambda: node(limits={"swap_total_bytes": None}), "skipped"),
    )

    def check(self, facts: Facts) -> Iterator[CheckResult]:
        title = _("Swap")
        total, used = facts.limits.swap_total_bytes, facts.limits.swap_used_bytes or 0
        if total is None:
            yield self.result("skipped", title, found=_("could not be read"))
        elif total == 0:
            yield self.result(
                "info",
                title,
                found=_("none"),
                why=_(
                    "Without swap, host memory exhaustion ends in the OOM killer (a rank or "
                    "worker disappears and its peers wait); with it, the job may crawl instead."
                ),
            )
        elif used > GIB and used > total // 10:
            yield self.result(
                "warn",
                title,
                found=_("{used} used of {total}", used=size(used), total=size(total)),
                wanted=_("little or no swap in use"),
                why=_(
                    "A training job that swaps slows down by orders of magnitude and looks "
                    "hung; peers of the slow rank time out in their collectives."
                ),
                fix=_(
                    "Find what uses the memory (`ps aux --sort=-rss | head`), then free it "
                    "or move the job; `sudo swapoff -a && sudo swapon -a` empties swap "
                    "once memory is free."
                ),
            )
        else:
            yield self.result(
                "ok", title, found=_("{used} used of {total}", used=size(used), total=size(total))
            )


class Ptrace(Check):
    """py-spy present and ptrace allowed (Yama ptrace_scope, CAP_SYS_PTRACE), so `run` and `dump` can
    read stacks

    Why: `hangdoctor run` and `dump` read Python stacks with py-spy, which needs ptrace. Without it
    (Yama `ptrace_scope` 2 or 3, a container without CAP_SYS_PTRACE) a hang is reported without the
    line where each thread waits; with `ptrace_scope` 1, `dump` of a job started elsewhere is
    refused.

    Instead: Install py-spy and allow ptrace: `sudo sysctl -w kernel.yama.ptrace_scope=0` (or run
    `dump` with sudo); in containers add the capability (Docker `--cap-add SYS_PTRACE`, Kubernetes
    `securityContext.capabilities.add: [SYS_PTRACE]`).
    """

    id = "DR207"
    area = "os_limits"
    fires_on = (
        Example(
            "ptrace_scope 3: no ptrace at all", lambda: node(limits={"ptrace_scope": 3}), "problem"
        ),
        Example(
            "root in a container without SYS_PTRACE",
            lambda: node(limits={"cap_sys_ptrace": False}),
            "warn",
        ),
        Example("py-spy missing", lambda: node(limits={"py_spy": None}), "warn"),
    )
    quiet_on = (
        Example("root with CAP_SYS_PTRACE", lambda: node(), "ok"),
        Example(
            "a user under ptrace_scope 1: run works, dump of others' jobs does not",
            lambda: node(limits={"ptrace_scope": 1, "cap_sys_ptrace": False, "is_root": False}),
            "info",
        ),
    )

    def check(self, facts: Facts) -> Iterator[CheckResult]:
        limits = facts.limits
        title = _("hangdoctor may read stacks (ptrace)")
        scope, cap = limits.ptrace_scope, limits.cap_sys_ptrace
        found = _(
            "ptrace_scope {scope}, CAP_SYS_PTRACE {cap}, {py_spy}",
            scope=scope if scope is not None else _("n/a (no Yama)"),
            cap=_("yes") if cap else _("no") if cap is not None else _("unknown"),
            py_spy=_("py-spy found") if limits.py_spy else _("py-spy missing"),
        )
        why = _(
            "`hangdoctor run` and `dump` read Python stacks with py-spy, which needs ptrace; "
            "without it a hang is reported without the line where each thread waits."
        )
        if not limits.py_spy:
            yield self.result(
                "warn",
                title,
                found=found,
                wanted=_("py-spy installed"),
                why=why,
                fix="pip install py-spy",
            )
        elif scope == 3:
            yield self.result(
                "problem",
                title,
                found=found,
                wanted="ptrace_scope <= 2",
                why=why,
                fix=_(
                    "ptrace_scope 3 cannot be lowered without a reboot: set "
                    "`kernel.yama.ptrace_scope=1` in /etc/sysctl.d/ and reboot"
                ),
                source=PTRACE_SOURCE,
            )
        elif cap is False and (limits.is_root or scope == 2):
            yield self.result(
                "warn",
                title,
                found=found,
                wanted="CAP_SYS_PTRACE",
                why=why,
                fix=_(
                    "Docker: `--cap-add SYS_PTRACE`; Kubernetes: "
                    "`securityContext.capabilities.add: [SYS_PTRACE]`; or run as root on the "
                    "host"
                ),
                source=PTRACE_SOURCE,
            )
        elif scope == 1 and not cap:
            yield self.result(
                "info",
                title,
                found=found,
                wanted=_("ptrace_scope 0, or CAP_SYS_PTRACE, for `hangdoctor dump`"),
                why=_(
                    "With ptrace_scope 1, `hangdoctor run` can read its own job's stacks, but "
                    "`hangdoctor dump PID` of a job started elsewhere is refused."
                ),
                fix=_("sudo sysctl -w kernel.yama.ptrace_scope=0   (or run dump with sudo)"),
                source=PTRACE_SOURCE,
            )
        else:
            yield self.result("ok", title, found=found)

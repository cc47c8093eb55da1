"""OS limits: memory maps, listen backlog, open files, locked memory, /dev/shm, swap, ptrace."""

from __future__ import annotations

from hangdoctor.doctor.facts import UNLIMITED, Facts, Limits
from hangdoctor.doctor.result import CheckResult
from hangdoctor.doctor.units import GIB, MIB, size

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


def _r(id: str, status: str, title: str, **fields: str | None) -> CheckResult:
    return CheckResult(id=id, area="os_limits", status=status, title=title,  # type: ignore[arg-type]
                       **{k: v for k, v in fields.items() if v is not None})


def _unknown(id: str, title: str) -> CheckResult:
    return _r(id, "skipped", title, found="could not be read")


def _max_map_count(limits: Limits) -> CheckResult:
    title = "vm.max_map_count"
    value = limits.max_map_count
    if value is None:
        return _unknown("DR201", title)
    why = ("Every memory-mapped file, shared-memory tensor passed by a DataLoader worker and "
           "large allocation is one mapping; at the limit mmap fails with ENOMEM and workers "
           "die or the loader waits for a batch that never comes.")
    fix = f"sudo sysctl -w vm.max_map_count={RAISED_MAX_MAP_COUNT}"
    if value < DEFAULT_MAX_MAP_COUNT:
        return _r("DR201", "warn", title, found=str(value), wanted=f">= {RAISED_MAX_MAP_COUNT}",
                  why=why, fix=fix)
    if value < RAISED_MAX_MAP_COUNT:
        # The kernel default: enough for most jobs, so not a warning on every stock machine.
        return _r("DR201", "info", title, found=f"{value} (the kernel default)",
                  wanted=f">= {RAISED_MAX_MAP_COUNT} for jobs that mmap many files or shards",
                  why=why, fix=fix)
    return _r("DR201", "ok", title, found=str(value))


def _somaxconn(limits: Limits) -> CheckResult:
    title = "net.core.somaxconn"
    value = limits.somaxconn
    if value is None:
        return _unknown("DR202", title)
    world = limits.world_size
    why = ("Rank 0's TCPStore accepts every rank's connection at start-up; beyond the listen "
           "backlog, connections are dropped and ranks wait in init_process_group until the "
           "rendezvous times out.")
    fix = "sudo sysctl -w net.core.somaxconn=4096"
    if world is not None and value < world:
        return _r("DR202", "problem", title, found=str(value),
                  wanted=f">= WORLD_SIZE ({world})", why=why, fix=fix)
    if value < MIN_SOMAXCONN:
        return _r("DR202", "warn", title, found=str(value), wanted=f">= {MIN_SOMAXCONN}",
                  why=why, fix=fix)
    return _r("DR202", "ok", title, found=str(value))


def _nofile(limits: Limits) -> CheckResult:
    title = "Open files (ulimit -n)"
    soft, hard = limits.nofile_soft, limits.nofile_hard
    if soft is None:
        return _unknown("DR203", title)
    if soft == UNLIMITED or soft >= MIN_NOFILE:
        return _r("DR203", "ok", title, found=str(soft if soft != UNLIMITED else "unlimited"))
    raise_to = hard if hard is not None and hard != UNLIMITED and hard >= MIN_NOFILE else 65536
    hard_text = "unlimited" if hard == UNLIMITED else str(hard)
    return _r("DR203", "warn", title, found=f"{soft} (hard {hard_text})",
              wanted=f">= {MIN_NOFILE}",
              why=("DataLoader workers pass tensors as file descriptors; when they run out, "
                   "the loader fails with `received 0 items of ancdata` or `Too many open "
                   "files`, and NCCL opens sockets per peer."),
              fix=(f"ulimit -n {raise_to}   (persistently: `* soft nofile {raise_to}` in "
                   "/etc/security/limits.conf; Docker: `--ulimit nofile=65536:65536`)"))


def _memlock(limits: Limits) -> CheckResult:
    title = "Locked memory (ulimit -l)"
    soft = limits.memlock_soft
    if soft is None:
        return _unknown("DR204", title)
    found = size(soft)
    why = ("RDMA (InfiniBand, RoCE) pins communication buffers; with a small limit NCCL's IB "
           "transport fails to register memory and falls back or stalls at start-up.")
    fix = ("ulimit -l unlimited   (persistently: `* - memlock unlimited` in "
           "/etc/security/limits.conf; Docker: `--ulimit memlock=-1:-1`)")
    if soft == UNLIMITED:
        return _r("DR204", "ok", title, found=found)
    if limits.rdma_devices:
        return _r("DR204", "warn", title, found=found, wanted="unlimited",
                  why=why + f" RDMA devices here: {', '.join(limits.rdma_devices)}.", fix=fix)
    return _r("DR204", "info", title, found=found,
              wanted="unlimited where RDMA is used (no RDMA device here)", why=why, fix=fix)


def _shm(limits: Limits, workers: int) -> CheckResult:
    title = "/dev/shm size"
    total = limits.shm_total_bytes
    if total is None:
        return _r("DR205", "warn", title, found="no /dev/shm",
                  wanted="a tmpfs on /dev/shm",
                  why="DataLoader workers pass batches through shared memory in /dev/shm.",
                  fix="Docker: `--ipc=host` or `--shm-size=16g`; Kubernetes: an emptyDir with "
                      "`medium: Memory` mounted at /dev/shm")
    free = limits.shm_free_bytes if limits.shm_free_bytes is not None else total
    wanted_bytes = max(SHM_FLOOR, workers * SHM_PER_WORKER_WANTED)
    minimum = max(SHM_FLOOR, workers * SHM_PER_WORKER_MINIMUM)
    found = f"{size(total)} ({size(free)} free)"
    wanted = f">= {size(wanted_bytes)} for {workers} DataLoader workers"
    why = ("Each DataLoader worker hands its batches to the trainer through /dev/shm; when it "
           "fills, a worker dies of SIGBUS (`insufficient shared memory`) or blocks, and the "
           "trainer waits for a batch that never comes. Docker's default is 64 MiB.")
    gib = max(1, -(-wanted_bytes // GIB))
    fix = (f"Docker: `docker run --ipc=host ...` or `--shm-size={gib}g`; Kubernetes: mount an "
           "emptyDir with `medium: Memory` at /dev/shm; host: "
           f"`sudo mount -o remount,size={gib}G /dev/shm`")
    if free < minimum:
        return _r("DR205", "problem", title, found=found, wanted=wanted, why=why, fix=fix)
    if free < wanted_bytes:
        return _r("DR205", "warn", title, found=found, wanted=wanted, why=why, fix=fix)
    return _r("DR205", "ok", title, found=found, wanted=wanted)


def _swap(limits: Limits) -> CheckResult:
    title = "Swap"
    total, used = limits.swap_total_bytes, limits.swap_used_bytes
    if total is None:
        return _unknown("DR206", title)
    if total == 0:
        return _r("DR206", "info", title, found="none",
                  why="Without swap, host memory exhaustion ends in the OOM killer (a rank or "
                      "worker disappears and its peers wait); with it, the job may crawl instead.")
    used = used or 0
    found = f"{size(used)} used of {size(total)}"
    if used > GIB and used > total // 10:
        return _r("DR206", "warn", title, found=found, wanted="little or no swap in use",
                  why="A training job that swaps slows down by orders of magnitude and looks "
                      "hung; peers of the slow rank time out in their collectives.",
                  fix="Find what uses the memory (`ps aux --sort=-rss | head`), then free it "
                      "or move the job; `sudo swapoff -a && sudo swapon -a` empties swap "
                      "once memory is free.")
    return _r("DR206", "ok", title, found=found)


def _ptrace(limits: Limits) -> CheckResult:
    title = "hangdoctor may read stacks (ptrace)"
    scope = limits.ptrace_scope
    cap = limits.cap_sys_ptrace
    found = (f"ptrace_scope {scope if scope is not None else 'n/a (no Yama)'}, "
             f"CAP_SYS_PTRACE {'yes' if cap else 'no' if cap is not None else 'unknown'}, "
             f"py-spy {'found' if limits.py_spy else 'missing'}")
    why = ("`hangdoctor run` and `dump` read Python stacks with py-spy, which needs ptrace; "
           "without it a hang is reported without the line where each thread waits.")
    if not limits.py_spy:
        return _r("DR207", "warn", title, found=found, wanted="py-spy installed", why=why,
                  fix="pip install py-spy")
    if scope == 3:
        return _r("DR207", "problem", title, found=found, wanted="ptrace_scope <= 2", why=why,
                  fix="ptrace_scope 3 cannot be lowered without a reboot: set "
                      "`kernel.yama.ptrace_scope=1` in /etc/sysctl.d/ and reboot",
                  source=PTRACE_SOURCE)
    if cap is False and (limits.is_root or scope == 2):
        return _r("DR207", "warn", title, found=found, wanted="CAP_SYS_PTRACE", why=why,
                  fix="Docker: `--cap-add SYS_PTRACE`; Kubernetes: "
                      "`securityContext.capabilities.add: [SYS_PTRACE]`; or run as root on the "
                      "host", source=PTRACE_SOURCE)
    if scope == 1 and not cap:
        return _r("DR207", "info", title, found=found,
                  wanted="ptrace_scope 0, or CAP_SYS_PTRACE, for `hangdoctor dump`",
                  why="With ptrace_scope 1, `hangdoctor run` can read its own job's stacks, but "
                      "`hangdoctor dump PID` of a job started elsewhere is refused.",
                  fix="sudo sysctl -w kernel.yama.ptrace_scope=0   (or run dump with sudo)",
                  source=PTRACE_SOURCE)
    return _r("DR207", "ok", title, found=found)


def check(facts: Facts) -> list[CheckResult]:
    """OS limit checks."""
    limits = facts.limits
    return [_max_map_count(limits), _somaxconn(limits), _nofile(limits), _memlock(limits),
            _shm(limits, facts.dataloader_workers), _swap(limits), _ptrace(limits)]

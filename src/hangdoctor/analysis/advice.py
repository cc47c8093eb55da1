"""Concrete next steps for a thread blocked in a given way, shared by every rule that finds one
(a stuck DataLoader worker, a straggling rank, a blocked main thread)."""

from __future__ import annotations

from hangdoctor.analysis.job import JobView
from hangdoctor.analysis.waits import Wait, WaitKind
from hangdoctor.i18n import N_, _

_NETWORK = {WaitKind.SOCKET_READ, WaitKind.SOCKET_WRITE, WaitKind.CONNECT, WaitKind.POLL}


def wait_fixes(wait: Wait, where: str) -> list[str]:
    """What to change so that a wait like `wait` at `where` cannot block forever."""
    if wait.kind in _NETWORK:
        return [
            _(
                "Give the network call at {where} a timeout (urlopen(url, timeout=30), "
                "requests.get(url, timeout=(5, 30)), sock.settimeout(30)) and retry or skip on "
                "failure.",
                where=where,
            )
        ]
    if wait.kind in (WaitKind.LOCK, WaitKind.FUTEX):
        return [
            _(
                "It waits on a lock or condition at {where}: find who holds it (the report "
                "lists every thread's stack) and acquire it with a timeout.",
                where=where,
            )
        ]
    if wait.kind in (WaitKind.FILE_IO, WaitKind.FILE_LOCK):
        return [
            _(
                "It waits for storage at {where}: check the filesystem (NFS, FUSE, object "
                "store mount) with `dmesg` and `mount`, or stage the data on local disk.",
                where=where,
            )
        ]
    if wait.kind in (WaitKind.PIPE_READ, WaitKind.PIPE_WRITE, WaitKind.CHILD):
        return [
            _(
                "It waits for another process at {where}: use subprocess.run(..., "
                "timeout=...) or communicate(timeout=...).",
                where=where,
            )
        ]
    if wait.kind is WaitKind.SLEEP:
        return [
            _(
                "It sleeps at {where}, likely an endless retry loop: bound the retries and "
                "raise when they run out.",
                where=where,
            )
        ]
    if wait.kind is WaitKind.TERMINAL:
        return [
            _(
                "It waits for keyboard input at {where} (input(), breakpoint()): remove it or "
                "run with stdin redirected from /dev/null.",
                where=where,
            )
        ]
    if wait.kind is WaitKind.RUNNING:
        return [
            _(
                "It is computing at {where}: if that should have finished, profile it "
                "(`py-spy top --pid PID`); if it is just slower, balance the work across ranks.",
                where=where,
            )
        ]
    return [_("Find out why the code at {where} does not return.", where=where)]


# Where a framework creates the process group, its own setting is what the user can change.
_FRAMEWORK_TIMEOUTS = (
    (
        "/transformers/",
        N_(
            "TrainingArguments(ddp_timeout=300) (seconds; the Trainer passes it to "
            "init_process_group)"
        ),
    ),
    ("/lightning/", N_("DDPStrategy(timeout=datetime.timedelta(minutes=5)) (or FSDPStrategy's)")),
    ("/pytorch_lightning/", "DDPStrategy(timeout=datetime.timedelta(minutes=5))"),
    (
        "/accelerate/",
        "Accelerator(kwargs_handlers=[InitProcessGroupKwargs(timeout="
        "datetime.timedelta(minutes=5))])",
    ),
)
#: Where no framework's setting is known: torch's own.
_TORCH_TIMEOUT = "init_process_group(..., timeout=datetime.timedelta(minutes=5))"


def process_group_timeout(job: JobView) -> str:
    """The advice to give the process group a timeout, naming the setting of the framework
    that created the process group where the job's stacks show one (Trainer, Lightning,
    accelerate)."""
    return job.derived("process_group_timeout", _process_group_timeout)


def _process_group_timeout(job: JobView) -> str:
    paths = {
        frame.file.replace("\\", "/")
        for process in job.processes
        for thread in process.threads
        for frame in (thread.python.frames if thread.python else ())
    }
    setting = next(
        (_(words) for marker, words in _FRAMEWORK_TIMEOUTS if any(marker in p for p in paths)),
        _TORCH_TIMEOUT,
    )
    return _(
        "Give the process group a timeout that fits your job, so peers fail with an error "
        "instead of waiting (gloo's default is 30 min, NCCL's 10): {setting}; with NCCL also "
        "set TORCH_NCCL_ASYNC_ERROR_HANDLING=1.",
        setting=setting,
    )

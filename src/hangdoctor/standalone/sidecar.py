"""`python -m hangdoctor.standalone.sidecar REQUEST`: the process that outlives a watched job
to report its failure, as `hangdoctor run` writes a report when its job fails.

The watching process may be the one that dies (an exception, the OOM killer), or be ended by
torchrun when another rank fails: so the report cannot come from inside the job. `watch()`
starts this process when it arms; it forks itself away from the job at once (its own session,
reparented: not part of the tree a hang capture reads, not ended with the job) and waits, light
(a look at /proc every 0.5 s, stdlib only), for the job's root process (the script; under
torchrun the launcher) to be gone. Then it reads how each process ended (`job_end`, from the
records `exit_record` wrote into the status files) and, if the job failed, writes
`failure-N/` in the report directory through the pipeline `run` uses for its final report
(`failure_report`), and exits. A job that ended well leaves nothing behind. One sidecar per
report directory (a lock): the ranks of a job torchrun restarts share the first one.
"""

from __future__ import annotations

import contextlib
import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

POLL_S = 0.5
LIMIT_S = 170  # seconds the report may take, once the job is gone (the alarm)
SETTLE_S = 5.0  # after the root is gone, how long the job's other processes may take to go
LOCK_FILE = ".sidecar.lock"
MODULE = "hangdoctor.standalone.sidecar"
#: Variables the sidecar must not inherit: it is no job to watch.
_NOT_INHERITED = ("HANGDOCTOR_WATCH", "HANGDOCTOR_STATUS_DIR", "HANGDOCTOR_SUPERVISED")


def start_time(pid: int) -> int | None:
    """A process's start, in clock ticks since boot (/proc): with the pid, its identity."""
    try:
        with open(f"/proc/{pid}/stat", "rb") as handle:
            fields = handle.read().rsplit(b")", 1)[1].split()
        if fields[0] == b"Z":
            return None  # a zombie: it has ended
        return int(fields[19])
    except (OSError, ValueError, IndexError):
        return None


def _parent(pid: int) -> int | None:
    try:
        with open(f"/proc/{pid}/stat", "rb") as handle:
            return int(handle.read().rsplit(b")", 1)[1].split()[1])
    except (OSError, ValueError, IndexError):
        return None


def descends(pid: int, root: int) -> bool | None:
    """Whether a live process is `root` or one of its descendants; None when it cannot be
    told (it has gone)."""
    for _step in range(64):
        if pid == root:
            return True
        parent = _parent(pid)
        if parent is None:
            return None
        if parent <= 1:
            return False
        pid = parent
    return False


def launch(
    root_pid: int, report_dir: Path, status_dir: Path, started_wall: float
) -> subprocess.Popen[bytes] | None:
    """Start the sidecar from the job (it forks away at once: `reap` the starter). Never
    raises; None when it could not start."""
    request = {
        "root_pid": root_pid,
        "root_started": start_time(root_pid),
        "report_dir": str(report_dir),
        "status_dir": str(status_dir),
        "started_wall": started_wall,
    }
    env = {key: value for key, value in os.environ.items() if key not in _NOT_INHERITED}
    try:
        return subprocess.Popen(
            [sys.executable, "-m", MODULE, json.dumps(request)],
            stdin=subprocess.DEVNULL,
            stdout=subprocess.DEVNULL,
            env=env,
            start_new_session=True,
            close_fds=True,
        )
    except (OSError, subprocess.SubprocessError):
        return None


def reap(starter: subprocess.Popen[bytes] | None) -> None:
    """Wait for the starter, which exits as soon as it has forked the sidecar away."""
    if starter is not None:
        with contextlib.suppress(Exception):
            starter.wait(timeout=60)


def _detach() -> None:
    if os.fork() != 0:
        os._exit(0)


def _lock(report_dir: Path) -> object | None:
    """The report directory's sidecar lock, held while this process lives; None when another
    sidecar holds it (a rank of a job that torchrun restarted)."""
    import fcntl

    try:
        handle = open(report_dir / LOCK_FILE, "a")  # noqa: SIM115 - held until exit
        fcntl.flock(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except OSError:
        return None
    return handle


class _Job:
    """What the sidecar follows of the job while it runs: its root, and when each process that
    writes a status file was first seen gone."""

    def __init__(self, root_pid: int, root_started: int | None, status_dir: Path) -> None:
        self.root_pid = root_pid
        self.root_started = root_started
        self.status_dir = status_dir
        self.started: dict[int, int | None] = {}  # pid -> its start (ticks), when seen alive
        self.gone: dict[int, float] = {}
        #: Processes seen alive outside the root's tree: another job's that shares the folder.
        self.strangers: set[int] = set()

    def root_alive(self) -> bool:
        now = start_time(self.root_pid)
        return now is not None and (self.root_started is None or now == self.root_started)

    def look(self) -> None:
        """Note the processes of the status folder that have gone since the last look."""
        try:
            names = os.listdir(self.status_dir)
        except OSError:
            return
        for name in names:
            if not (name.startswith("status-") and name.endswith(".json")):
                continue
            number = name[len("status-") : -len(".json")]
            if not number.isdecimal():
                continue
            pid = int(number)
            if pid in self.gone:
                continue
            now = start_time(pid)
            if pid not in self.started:
                self.started[pid] = now
                if now is None:
                    self.gone[pid] = time.time()  # gone before it was first seen
                elif descends(pid, self.root_pid) is False:
                    self.strangers.add(pid)
            elif now is None or now != self.started[pid]:
                self.gone[pid] = time.time()

    def running(self) -> bool:
        return any(pid not in self.gone for pid in self.started if pid not in self.strangers)

    def gone_at(self, pid: int) -> float | None:
        """When the process was seen gone; None while it runs, or when it is not the job's."""
        if pid in self.strangers:
            return None
        if pid in self.gone:
            return self.gone[pid]
        return None if pid in self.started else time.time()


def follow(job: _Job) -> None:
    """Wait for the job's root to be gone, then (a few seconds at most) for the rest."""
    while job.root_alive():
        job.look()
        if not job.status_dir.is_dir():
            return  # the report directory was removed: nothing to report into
        time.sleep(POLL_S)
    settle = time.monotonic() + SETTLE_S
    while True:
        job.look()
        if not job.running() or time.monotonic() > settle:
            return
        time.sleep(0.1)


def _statuses(status_dir: Path, since: float) -> list[dict[str, object]]:
    """Each status of this job (written since it started: not an earlier run's, in a report
    directory the user fixed)."""
    found = []
    try:
        paths = sorted(status_dir.glob("status-*.json"))
    except OSError:
        return []
    for path in paths:
        with contextlib.suppress(OSError, ValueError):
            data = json.loads(path.read_bytes())
            updated = data.get("updated_at") if isinstance(data, dict) else None
            if isinstance(updated, (int, float)) and updated >= since - 1.0:
                found.append(data)
    return found


def _texts(status_dir: Path, prefix: str) -> dict[int, str]:
    """pid -> the start of each non-empty `<prefix><pid>.txt` (faulthandler's)."""
    found: dict[int, str] = {}
    with contextlib.suppress(OSError):
        for path in status_dir.glob(prefix + "*.txt"):
            number = path.stem[len(prefix) :]
            with contextlib.suppress(OSError):
                text = path.read_bytes()[:4096].decode("utf-8", "replace")
                if number.isdecimal() and text.strip():
                    found[int(number)] = text
    return found


def main(argv: list[str]) -> int:
    try:
        request = json.loads(argv[0]) if len(argv) == 1 else None
        root_pid = int(request["root_pid"])  # type: ignore[index]
        report_dir = Path(str(request["report_dir"]))  # type: ignore[index]
        status_dir = Path(str(request["status_dir"]))  # type: ignore[index]
        since = float(request["started_wall"])  # type: ignore[index]
        root_started = request.get("root_started")  # type: ignore[union-attr]
    except (ValueError, KeyError, TypeError, IndexError):
        from hangdoctor.i18n import _

        sys.stderr.write(
            "hangdoctor: "
            + _(
                "this is the sidecar that watch() starts to report a failure; it takes one JSON request"
            )
            + "\n"
        )
        return 2
    _detach()
    lock = _lock(report_dir)  # held (kept referenced) until this process exits
    if lock is None:
        return 0  # another sidecar watches this report directory
    job = _Job(root_pid, root_started if isinstance(root_started, int) else None, status_dir)
    command = command_line(root_pid)
    follow(job)
    from hangdoctor.standalone.job_end import judge

    stopped = _texts(status_dir, "stopped-")
    failure = judge(
        _statuses(status_dir, since), job.gone_at, _texts(status_dir, "fault-"), stopped
    )
    if failure is None:
        return 0
    signal.alarm(LIMIT_S)  # the last bound: whatever stalls, the sidecar does not linger
    try:
        from hangdoctor.standalone.failure_report import report_failure

        return report_failure(report_dir, status_dir, since, root_pid, command, failure)
    except Exception as error:
        if os.environ.get("HANGDOCTOR_DEBUG"):
            import traceback

            traceback.print_exc()
        from hangdoctor.i18n import _

        reason = f"{type(error).__name__}: {error}"
        with contextlib.suppress(OSError, ValueError):
            sys.stderr.write(
                "hangdoctor: " + _("cannot write the failure report ({error})", error=reason) + "\n"
            )
        return 1


def command_line(pid: int) -> tuple[str, ...]:
    """`pid`'s argv from /proc (empty when it is gone or hidden); stdlib only, shared with
    the hang capture."""
    try:
        with open(f"/proc/{pid}/cmdline", "rb") as handle:
            raw = handle.read()
    except OSError:
        return ()
    return tuple(part.decode("utf-8", "replace") for part in raw.split(b"\0") if part)


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))

"""Helpers shared by the `hangdoctor run` benchmarks (bench_run_*.py): start a command with a
time limit, always kill its whole tree, and print Markdown tables.

Every process a benchmark starts carries HANGDOCTOR_BENCH_MARK=<token> in its environment, so
the clean-up also finds processes that left the tree (torchrun starts its ranks in sessions of
their own; a killed hangdoctor leaves its job's processes to init).
"""

from __future__ import annotations

import contextlib
import os
import resource
import signal
import statistics
import subprocess
import sys
import threading
import time
import uuid
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

import psutil

HERE = Path(__file__).resolve().parent
JOBS = HERE / "jobs"
MARK_ENV = "HANGDOCTOR_BENCH_MARK"


class BenchError(Exception):
    """Something the benchmark needs did not run; the message says what."""


def terminate_on_sigterm() -> None:
    """Turn SIGTERM into an exception, so the `finally` that kills the job runs for it too."""

    def handler(signum: int, _frame: object) -> None:
        raise KeyboardInterrupt(f"signal {signum}")

    signal.signal(signal.SIGTERM, handler)


def compile_like_an_install() -> None:
    """Byte-compile hangdoctor's modules, as `pip install` of a wheel does. An editable
    install in an environment with PYTHONDONTWRITEBYTECODE (as on the machines these numbers
    come from) would otherwise recompile every module at every start, ~0.15 s of CPU a run."""
    import compileall

    import hangdoctor

    compileall.compile_dir(str(Path(hangdoctor.__file__).parent), quiet=1)


def hangdoctor_command() -> list[str]:
    """The installed `hangdoctor` script beside this interpreter, else `python -m hangdoctor`."""
    script = Path(sys.executable).parent / "hangdoctor"
    return [str(script)] if script.is_file() else [sys.executable, "-m", "hangdoctor"]


def new_mark() -> str:
    """A token that tags the processes of one run."""
    return uuid.uuid4().hex


def marked_env(mark: str, extra: dict[str, str] | None = None) -> dict[str, str]:
    """Our environment, plus the run's mark and `extra`."""
    return {**os.environ, **(extra or {}), MARK_ENV: mark}


def kill_tree(process: subprocess.Popen, mark: str | None) -> None:
    """SIGKILL `process`, its descendants, its process group and anything carrying `mark`;
    reap `process`. Never raises."""
    victims: dict[int, psutil.Process] = {}
    with contextlib.suppress(psutil.Error):
        root = psutil.Process(process.pid)
        victims[root.pid] = root
        for child in root.children(recursive=True):
            victims[child.pid] = child
    if mark is not None:
        for candidate in psutil.process_iter():
            with contextlib.suppress(psutil.Error):
                if candidate.environ().get(MARK_ENV) == mark:
                    victims.setdefault(candidate.pid, candidate)
    victims.pop(os.getpid(), None)
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(process.pid, signal.SIGKILL)
    for victim in victims.values():
        with contextlib.suppress(psutil.Error):
            victim.kill()
    try:
        process.wait(timeout=10)
    except subprocess.TimeoutExpired:
        print(f"warning: process {process.pid} did not die within 10 s", file=sys.stderr)
    psutil.wait_procs([v for v in victims.values() if v.pid != process.pid], timeout=5)


def leftovers(mark: str) -> list[int]:
    """Live (not zombie) processes that carry `mark`."""
    found = []
    for candidate in psutil.process_iter():
        with contextlib.suppress(psutil.Error):
            if (
                candidate.environ().get(MARK_ENV) == mark
                and candidate.status() != psutil.STATUS_ZOMBIE
            ):
                found.append(candidate.pid)
    return found


def children_cpu_s() -> float:
    """User + system CPU seconds of our reaped children and everything they reaped: the delta
    around one run is that run's whole tree, as long as runs do not overlap."""
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


class SelfCpuPoller:
    """Polls the user + system CPU seconds of one process (not its children) every 0.2 s
    until it exits; the last reading is its own CPU cost, short by at most the last period."""

    def __init__(self, pid: int, period_s: float = 0.2) -> None:
        self.last = 0.0
        self._stopped = threading.Event()
        try:
            self._process: psutil.Process | None = psutil.Process(pid)
        except psutil.Error:
            self._process = None
        self._thread = threading.Thread(
            target=self._loop, args=(period_s,), daemon=True, name=f"cpu-poller-{pid}"
        )
        self._thread.start()

    def _loop(self, period_s: float) -> None:
        while self._process is not None and not self._stopped.is_set():
            try:
                times = self._process.cpu_times()
            except psutil.Error:
                return
            self.last = times.user + times.system
            self._stopped.wait(period_s)

    def stop(self) -> float:
        """Stop polling; the last reading."""
        self._stopped.set()
        self._thread.join(timeout=5)
        return self.last


@dataclass
class Finished:
    """A command that ran to its end."""

    returncode: int
    stdout: bytes
    stderr: bytes
    wall_s: float
    cpu_s: float  # user + system seconds of the whole tree (what its processes reaped counts)
    self_cpu_s: float  # user + system of the started process alone (polled, up to 0.2 s short)


def run_command(
    command: Sequence[str],
    timeout_s: float,
    env: dict[str, str] | None = None,
    cwd: Path | None = None,
    mark: str | None = None,
) -> Finished:
    """Run `command` in a session of its own, stdout and stderr captured, within `timeout_s`;
    its whole tree is killed on the way out, whatever happens."""
    mark = mark or new_mark()
    before = children_cpu_s()
    start = time.perf_counter()
    process = subprocess.Popen(
        list(command),
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        env=marked_env(mark, env),
        cwd=cwd,
        start_new_session=True,
    )
    poller = SelfCpuPoller(process.pid)
    try:
        try:
            stdout, stderr = process.communicate(timeout=timeout_s)
        except subprocess.TimeoutExpired as error:
            raise BenchError(
                f"`{' '.join(command)}` did not finish within {timeout_s:g} s"
            ) from error
        wall = time.perf_counter() - start
        return Finished(
            process.returncode, stdout, stderr, wall, children_cpu_s() - before, poller.stop()
        )
    finally:
        poller.stop()
        kill_tree(process, mark)


def row(cells: Sequence[str]) -> str:
    """One Markdown table row."""
    return "| " + " | ".join(cells) + " |"


def median(values: Sequence[float]) -> float:
    """The median, NaN for no values."""
    return statistics.median(values) if values else float("nan")


def tail(data: bytes, chars: int = 2000) -> str:
    """The end of some output, for an error message."""
    return data.decode("utf-8", errors="replace").strip()[-chars:]

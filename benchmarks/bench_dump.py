"""How long does `hangdoctor dump` take on a realistic hung job?

Starts stalled_dataloader_job.py (1 main process + N DataLoader workers, one stuck forever),
then times `capture_tree` in-process and the full `hangdoctor dump` CLI end to end against it.
The target is a median capture of at most 1.5 s, so a user gets an answer without waiting.
It prints Markdown tables (shares and ratios, no asserts) and exits non-zero only when
something fails to run. Every wait has a timeout and the job's whole process group is killed
on the way out, Ctrl-C included. Usage:

    .venv/bin/python benchmarks/bench_dump.py [--workers 8] [--threads 1] [--runs 5]
"""

from __future__ import annotations

import argparse
import contextlib
import os
import select
import shutil
import signal
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import TypeVar

from hangdoctor.capture.tree import CaptureOptions, capture_tree
from hangdoctor.evidence.model import Bundle

HERE = Path(__file__).resolve().parent
JOB = HERE / "stalled_dataloader_job.py"
TARGET_S = 1.5
READY_TIMEOUT_S = 180.0  # importing torch in 1 + N processes on a slow box
SETTLE_S = 1.0  # after READY, so the main process is really blocked waiting for data
CAPTURE_TIMEOUT_S = 120.0
CLI_TIMEOUT_S = 120.0
JOB_MAX_S = 900.0  # the job kills itself after this even if we could not
WAITING = "waiting between samples"
PROBES = ("process tree", "procfs", "py-spy", "sources", WAITING, "sockets", "system")
OK_EXIT_CODES = (0, 1)  # `hangdoctor dump`: 0 nothing found, 1 a problem diagnosed

T = TypeVar("T")


class BenchError(Exception):
    """Something the benchmark needs did not run; the message says what."""


@dataclass
class Results:
    """Everything measured, kept together so the tables can be printed from it."""

    capture_s: list[float] = field(default_factory=list)
    cli_s: list[float] = field(default_factory=list)
    bundles: list[Bundle] = field(default_factory=list)
    cli_codes: list[int] = field(default_factory=list)


def _terminate_on_sigterm() -> None:
    """Turn SIGTERM into an exception, so the `finally` that kills the job runs for it too."""

    def handler(signum: int, _frame: object) -> None:
        raise KeyboardInterrupt(f"signal {signum}")

    signal.signal(signal.SIGTERM, handler)


def start_job(workers: int, threads: int = 1) -> subprocess.Popen[str]:
    """The job in a session of its own, so one killpg reaches the main process and workers."""
    return subprocess.Popen(
        [sys.executable, str(JOB), str(workers), str(JOB_MAX_S), str(threads)],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        start_new_session=True,
    )


def kill_job(job: subprocess.Popen[str]) -> None:
    """Kill the job's whole process group and reap the main process; never raises."""
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(job.pid, signal.SIGKILL)
    try:
        job.wait(timeout=10)
    except subprocess.TimeoutExpired:
        print(f"warning: job {job.pid} did not die within 10 s", file=sys.stderr)


def wait_ready(job: subprocess.Popen[str], timeout_s: float) -> None:
    """Wait for the job's READY line, with a deadline, without blocking on a silent pipe."""
    assert job.stdout is not None
    deadline = time.monotonic() + timeout_s
    while True:
        left = deadline - time.monotonic()
        if left <= 0:
            raise BenchError(f"the job printed no READY within {timeout_s:g} s")
        if job.poll() is not None:
            error = job.stderr.read() if job.stderr else ""
            raise BenchError(f"the job exited with code {job.returncode}: {error.strip()[-2000:]}")
        readable, _, _ = select.select([job.stdout], [], [], min(left, 0.5))
        if readable:
            line = job.stdout.readline()
            if line.strip() == "READY":
                return


def call_with_timeout(fn: Callable[[], T], timeout_s: float, what: str) -> T:
    """Run fn in a daemon thread, so a capture that hangs cannot hang the benchmark."""
    box: dict[str, object] = {}

    def target() -> None:
        try:
            box["value"] = fn()
        except BaseException as error:
            box["error"] = error

    thread = threading.Thread(target=target, daemon=True, name=what)
    thread.start()
    thread.join(timeout_s)
    if thread.is_alive():
        raise BenchError(f"{what} did not finish within {timeout_s:g} s")
    if "error" in box:
        raise BenchError(f"{what} failed: {box['error']!r}") from box["error"]  # type: ignore[misc]
    return box["value"]  # type: ignore[return-value]


def time_capture(pid: int) -> tuple[float, Bundle]:
    """Wall seconds of one in-process capture_tree, and its bundle."""

    def run() -> tuple[float, Bundle]:
        start = time.perf_counter()
        bundle = capture_tree(pid, CaptureOptions())
        return time.perf_counter() - start, bundle

    return call_with_timeout(run, CAPTURE_TIMEOUT_S, "capture_tree")


def cli_command() -> list[str]:
    """The installed `hangdoctor` script beside this interpreter, else `python -m hangdoctor`."""
    script = Path(sys.executable).parent / "hangdoctor"
    return [str(script)] if script.is_file() else [sys.executable, "-m", "hangdoctor"]


def time_cli(pid: int, report_dir: Path) -> tuple[float, int]:
    """End-to-end wall seconds of `hangdoctor dump` (interpreter start, imports, capture,
    diagnosis, report files), and its exit code."""
    command = [*cli_command(), "dump", str(pid), "--report-dir", str(report_dir)]
    start = time.perf_counter()
    try:
        done = subprocess.run(
            command, capture_output=True, text=True, timeout=CLI_TIMEOUT_S, check=False
        )
    except subprocess.TimeoutExpired as error:
        raise BenchError(
            f"`{' '.join(command)}` did not finish within {CLI_TIMEOUT_S:g} s"
        ) from error
    elapsed = time.perf_counter() - start
    if done.returncode not in OK_EXIT_CODES:
        raise BenchError(
            f"`{' '.join(command)}` exited with {done.returncode}: {done.stderr.strip()[-2000:]}"
        )
    return elapsed, done.returncode


def counts(bundle: Bundle) -> tuple[int, int, int]:
    """(processes, threads, threads with a Python stack) in the first snapshot."""
    processes = bundle.snapshots[0].processes
    threads = [t for p in processes for t in p.threads]
    return len(processes), len(threads), sum(t.python is not None for t in threads)


def run_benchmark(workers: int, runs: int, results: Results, threads: int = 1) -> None:
    """Start the job, measure, and always kill the job's process group."""
    job = start_job(workers, threads)
    try:
        wait_ready(job, READY_TIMEOUT_S)
        time.sleep(SETTLE_S)
        if job.poll() is not None:
            raise BenchError(f"the job exited with code {job.returncode} after READY")
        for _ in range(runs):
            elapsed, bundle = time_capture(job.pid)
            results.capture_s.append(elapsed)
            results.bundles.append(bundle)
        with tempfile.TemporaryDirectory(prefix="hangdoctor-bench-") as tmp:
            for index in range(runs):
                elapsed, code = time_cli(job.pid, Path(tmp) / f"run-{index}")
                results.cli_s.append(elapsed)
                results.cli_codes.append(code)
    finally:
        kill_job(job)


def _row(cells: list[str]) -> str:
    return "| " + " | ".join(cells) + " |"


def print_tables(results: Results, workers: int) -> None:
    """The Markdown report: wall times against the target, then where capture time goes."""
    processes, threads, with_stacks = counts(results.bundles[0])
    print(
        f"\n### hangdoctor dump on a stalled DataLoader job (1 main + {workers} workers, "
        f"{len(results.capture_s)} runs, {os.cpu_count()} CPUs)\n"
    )
    print(
        _row(
            [
                "what",
                "median s",
                "min s",
                "max s",
                "target s",
                "median / target",
                "processes",
                "threads",
            ]
        )
    )
    print(_row(["---"] + ["---:"] * 7))
    for name, values in (
        ("capture_tree (in-process)", results.capture_s),
        ("`hangdoctor dump` CLI (end to end)", results.cli_s),
    ):
        median = statistics.median(values)
        print(
            _row(
                [
                    name,
                    f"{median:.3f}",
                    f"{min(values):.3f}",
                    f"{max(values):.3f}",
                    f"<= {TARGET_S:g}",
                    f"{median / TARGET_S:.2f}",
                    str(processes),
                    str(threads),
                ]
            )
        )
    print(
        f"\nThreads with a Python stack: {with_stacks} of {threads}. "
        f"CLI exit codes: {results.cli_codes}. "
        f"Capture runs (s): {', '.join(f'{v:.3f}' for v in results.capture_s)}."
    )
    errors = {(e.probe, e.kind, e.message) for b in results.bundles for e in b.errors}
    if errors:
        print("Probe errors: " + "; ".join(f"{p}/{k}: {m}" for p, k, m in sorted(errors)))

    print("\n### Share of capture_tree wall time per probe (median over runs)\n")
    print(_row(["probe", "median s", "median share"]))
    print(_row(["---", "---:", "---:"]))
    names = list(PROBES) + sorted({k for b in results.bundles for k in b.timings_s} - set(PROBES))
    for name in [*names, "unaccounted"]:
        seconds = []
        for bundle, wall in zip(results.bundles, results.capture_s, strict=True):
            value = (
                wall - sum(bundle.timings_s.values())
                if name == "unaccounted"
                else bundle.timings_s.get(name, 0.0)
            )
            seconds.append(value)
        shares = [s / wall for s, wall in zip(seconds, results.capture_s, strict=True)]
        label = f"{name} (deliberate pause between the 2 snapshots)" if name == WAITING else name
        print(
            _row([label, f"{statistics.median(seconds):.3f}", f"{statistics.median(shares):.1%}"])
        )
    working = [
        w - b.timings_s.get(WAITING, 0.0)
        for b, w in zip(results.bundles, results.capture_s, strict=True)
    ]
    print(f"\nCapture without the deliberate pause: median {statistics.median(working):.3f} s.")


def main(argv: list[str] | None = None) -> int:
    """Parse options, run, print; 0 when everything ran, 1 when something failed to run."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--workers", type=int, default=8, help="DataLoader workers (default 8)")
    parser.add_argument("--runs", type=int, default=5, help="runs of each kind (default 5)")
    parser.add_argument("--threads", type=int, default=1, help="threads in each worker (default 1)")
    args = parser.parse_args(argv)
    if args.workers < 1 or args.runs < 1:
        parser.error("--workers and --runs must be at least 1")
    if shutil.which("py-spy") is None and not (Path(sys.executable).parent / "py-spy").is_file():
        print("warning: py-spy not found; stacks will be missing", file=sys.stderr)
    _terminate_on_sigterm()
    results = Results()
    try:
        run_benchmark(args.workers, args.runs, results, args.threads)
    except BenchError as error:
        print(f"bench_dump: error: {error}", file=sys.stderr)
        return 1
    except KeyboardInterrupt:
        print("bench_dump: interrupted", file=sys.stderr)
        return 130
    print_tables(results, args.workers)
    return 0


if __name__ == "__main__":
    sys.exit(main())

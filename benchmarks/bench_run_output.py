"""Does `hangdoctor run` slow down a job that writes a lot to stdout?

Runs jobs/write_bytes_job.py (200 MB by default, as 1 MiB os.write chunks or as buffered
100-byte print lines) directly and under `hangdoctor run --report-dir TMP -- python job.py`,
alternating, with stdout a pipe that this benchmark drains in both cases (the job's pipe
directly; hangdoctor's pipe, which hangdoctor's relay fills from the job's). Throughput is
bytes / (last byte - first byte) as seen by the drain, so interpreter start-up and report
writing do not count; end-to-end wall times are shown beside it. PYTHONUNBUFFERED is removed
from the job's environment (in both variants) so that `lines` measures print's default
buffering. The target is a ratio
hangdoctor/direct of at least 0.9, and an output.log of exactly the job's byte count.
Markdown tables, no asserts on timings, exit non-zero only when something fails to run;
every run has a timeout and its whole tree is killed on the way out. Usage:

    .venv/bin/python benchmarks/bench_run_output.py [--mb 200] [--pairs 3] [--modes chunks,lines]
"""

from __future__ import annotations

import argparse
import os
import select
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path

from _runbench import (
    JOBS,
    BenchError,
    compile_like_an_install,
    hangdoctor_command,
    kill_tree,
    marked_env,
    median,
    new_mark,
    row,
    tail,
    terminate_on_sigterm,
)

JOB = JOBS / "write_bytes_job.py"
TARGET_RATIO = 0.9
RUN_TIMEOUT_S = 300.0
READ_SIZE = 1 << 20
MODES = ("chunks", "lines")
VARIANTS = ("direct", "run")


@dataclass
class Sample:
    mode: str
    variant: str
    round: int
    received: int
    stream_s: float  # first byte to last byte, at the drain
    wall_s: float  # start to exit
    log_bytes: int | None = None  # size of output.log, under hangdoctor

    @property
    def stream_mb_s(self) -> float:
        return self.received / self.stream_s / 1e6 if self.stream_s > 0 else float("inf")


@dataclass
class Results:
    samples: list[Sample] = field(default_factory=list)

    def of(self, mode: str, variant: str) -> list[Sample]:
        return [s for s in self.samples if s.mode == mode and s.variant == variant]


def drain(process: subprocess.Popen, deadline: float) -> tuple[int, float, float, bytes]:
    """Read stdout (counting, discarding) and stderr (kept) to EOF; returns (stdout bytes,
    time of the first stdout byte, of the last, stderr)."""
    assert process.stdout is not None and process.stderr is not None
    out_fd, err_fd = process.stdout.fileno(), process.stderr.fileno()
    open_fds = {out_fd, err_fd}
    received, first, last, errors = 0, 0.0, 0.0, bytearray()
    while open_fds:
        left = deadline - time.perf_counter()
        if left <= 0:
            raise BenchError("the run did not close its output in time")
        readable, _, _ = select.select(list(open_fds), [], [], min(left, 1.0))
        for fd in readable:
            data = os.read(fd, READ_SIZE)
            if not data:
                open_fds.discard(fd)
            elif fd == out_fd:
                now = time.perf_counter()
                if not received:
                    first = now
                received += len(data)
                last = now
            else:
                errors += data
    return received, first, last, bytes(errors)


def run_once(mode: str, variant: str, round_: int, size: int, tmp: Path) -> Sample:
    report_dir = tmp / f"{mode}-{variant}-{round_}"
    command = [sys.executable, str(JOB), mode, str(size)]
    if variant == "run":
        command = [*hangdoctor_command(), "run", "--report-dir", str(report_dir), "--", *command]
    mark = new_mark()
    env = marked_env(mark)
    env.pop("PYTHONUNBUFFERED", None)  # `lines` is about print's default, buffered stdout
    start = time.perf_counter()
    process = subprocess.Popen(
        command,
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        env=env,
        start_new_session=True,
    )
    try:
        received, first, last, errors = drain(process, start + RUN_TIMEOUT_S)
        try:
            code = process.wait(timeout=max(1.0, start + RUN_TIMEOUT_S - time.perf_counter()))
        except subprocess.TimeoutExpired as error:
            raise BenchError(f"{mode}/{variant} run {round_} did not exit in time") from error
        wall = time.perf_counter() - start
    finally:
        kill_tree(process, mark)
    if code != 0:
        raise BenchError(f"{mode}/{variant} run {round_} exited with {code}: {tail(errors)}")
    sample = Sample(mode, variant, round_, received, last - first, wall)
    if variant == "run":
        log = report_dir / "output.log"
        sample.log_bytes = log.stat().st_size if log.exists() else None
        for path in sorted(report_dir.rglob("*")):  # keep tmp small: 200 MB per run
            if path.name == "output.log":
                path.unlink()
    return sample


def run_benchmark(modes: list[str], pairs: int, size: int, results: Results) -> None:
    with tempfile.TemporaryDirectory(prefix="hangdoctor-bench-output-") as tmp:
        for mode in modes:
            run_once(mode, "direct", -1, size, Path(tmp))  # warm-up: page cache, imports
            for round_ in range(pairs):
                order = VARIANTS if round_ % 2 == 0 else VARIANTS[::-1]
                for variant in order:
                    sample = run_once(mode, variant, round_, size, Path(tmp))
                    results.samples.append(sample)
                    print(
                        f"  {mode} round {round_} {variant:<6} {sample.stream_mb_s:8.1f} MB/s "
                        f"stream, wall {sample.wall_s:.2f} s",
                        file=sys.stderr,
                        flush=True,
                    )


def print_tables(results: Results, modes: list[str], pairs: int, size: int) -> None:
    print(
        f"\n### `hangdoctor run` output throughput ({size / 1e6:g} MB to stdout, a pipe "
        f"drained by the benchmark; {pairs} pairs per mode, alternated; "
        f"{os.cpu_count()} CPUs)\n"
    )
    print(
        row(
            [
                "mode",
                "variant",
                "median MB/s (stream)",
                "min",
                "max",
                "median wall s",
                "ratio run/direct (medians)",
                "ratio (median of pairs)",
                "target",
            ]
        )
    )
    print(row(["---", "---", "---:", "---:", "---:", "---:", "---:", "---:", "---:"]))
    checks = []
    for mode in modes:
        direct = {s.round: s for s in results.of(mode, "direct")}
        for variant in VARIANTS:
            samples = results.of(mode, variant)
            rates = [s.stream_mb_s for s in samples]
            if variant == "direct":
                ratio = paired = "1"
                target = ""
            else:
                ratio = f"{median(rates) / median([s.stream_mb_s for s in direct.values()]):.3f}"
                paired = (
                    f"{median([s.stream_mb_s / direct[s.round].stream_mb_s for s in samples]):.3f}"
                )
                target = f">= {TARGET_RATIO:g}"
            print(
                row(
                    [
                        mode,
                        f"`{'hangdoctor run' if variant == 'run' else 'direct'}`",
                        f"{median(rates):.0f}",
                        f"{min(rates):.0f}",
                        f"{max(rates):.0f}",
                        f"{median([s.wall_s for s in samples]):.2f}",
                        ratio,
                        paired,
                        target,
                    ]
                )
            )
        runs = results.of(mode, "run")
        wall_ratio = median([s.wall_s / direct[s.round].wall_s for s in runs])
        checks.append(
            f"{mode}: end-to-end wall ratio run/direct (median of pairs) {wall_ratio:.2f}"
        )
    received_ok = all(s.received == size for s in results.samples)
    logs = sorted(
        {s.log_bytes for s in results.samples if s.variant == "run"},
        key=lambda v: -1 if v is None else v,
    )
    log_ok = logs == [size]
    print(
        f"\nBytes received by the drain == {size} in every run: "
        f"{'yes' if received_ok else 'NO'}. output.log size == {size} in every hangdoctor "
        f"run: {'yes' if log_ok else 'NO'} (sizes seen: {logs})."
    )
    print("; ".join(checks) + " (includes hangdoctor's start-up and report).")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--mb", type=float, default=200.0, help="MB (10^6 bytes) to write")
    parser.add_argument("--pairs", type=int, default=3, help="pairs per mode (default 3)")
    parser.add_argument("--modes", default="chunks,lines", help="comma-separated: chunks,lines")
    args = parser.parse_args(argv)
    modes = [m.strip() for m in args.modes.split(",") if m.strip()]
    if not modes or not set(modes) <= set(MODES):
        parser.error("--modes: one or both of chunks, lines")
    if args.pairs < 1 or args.mb <= 0:
        parser.error("--pairs must be at least 1 and --mb positive")
    size = int(args.mb * 1e6)
    terminate_on_sigterm()
    compile_like_an_install()
    results = Results()
    try:
        run_benchmark(modes, args.pairs, size, results)
    except BenchError as error:
        print(f"bench_run_output: error: {error}", file=sys.stderr)
        return 1
    except KeyboardInterrupt:
        print("bench_run_output: interrupted", file=sys.stderr)
        return 130
    print_tables(results, modes, args.pairs, size)
    return 0


if __name__ == "__main__":
    sys.exit(main())

"""How soon after a distributed job stops does `hangdoctor run` have a report?

Runs jobs/two_rank_stall_job.py under `hangdoctor run --hang-timeout S --on-hang kill -- python
-m torch.distributed.run --standalone --nproc_per_node 2 ...` (gloo, CPU; 2 ranks, each with a
DataLoader of 2 workers). After a few steps rank 1's dataset blocks forever in __getitem__ and
rank 0 waits in all_reduce. The job writes the moment it stopped progressing (rank 1's worker
starts blocking; each rank's last batch, collective, step or line); the latency is the mtime of
<report-dir>/hang-1/report.json minus the latest of those moments. Target: at most S + 3 s.
The latency is split into what hangdoctor's own clock shows: how late it saw the last progress
(sampling), the threshold it waited, and capture plus report. Runs alternate between the
values of S; a total time limit stops the benchmark early (what ran is reported). Markdown
tables, no asserts on timings, exit non-zero only when something fails to run; every run has a
timeout and its whole tree is killed on the way out. Usage:

    .venv/bin/python benchmarks/bench_run_detection.py [--timeouts 5,10] [--runs 3]
        [--time-limit 900]
"""

from __future__ import annotations

import argparse
import json
import os
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
    median,
    new_mark,
    row,
    run_command,
    tail,
    terminate_on_sigterm,
)

JOB = JOBS / "two_rank_stall_job.py"
MARGIN_S = 3.0  # the target: a report at most S + MARGIN_S after the stall
HUNG_EXIT = 124  # hangdoctor ended the job because it hung
RUN_TIMEOUT_S = 240.0
MIN_RUN_S = 60.0  # do not start a run with less than this left of the time limit


@dataclass
class Sample:
    timeout_s: float
    run: int
    latency_s: float  # report.json mtime - stall moment
    seen_late_s: float  # hangdoctor's last-progress time - stall moment
    waited_s: float  # declared - last progress, by hangdoctor's clock
    capture_s: float  # report.json mtime - declared
    wall_s: float
    category: str | None
    culprit: str
    hang_kind: str | None
    rank0_in: str | None  # the collective rank 0 waits in, as the instrumentation saw it
    processes: int


@dataclass
class Results:
    samples: list[Sample] = field(default_factory=list)
    skipped: int = 0

    def of(self, timeout_s: float) -> list[Sample]:
        return [s for s in self.samples if s.timeout_s == timeout_s]


def stall_moment(stall_dir: Path) -> float:
    """The latest progress moment the job recorded; BenchError if the stall never began."""
    if not (stall_dir / "blocked").exists():
        raise BenchError(
            "rank 1's dataset never started blocking (the job failed or was ended before the stall)"
        )
    moments = [
        float(path.read_text())
        for path in stall_dir.iterdir()
        if path.name == "blocked" or path.name.startswith("progress-rank")
        if not path.name.endswith(".tmp")
    ]
    return max(moments)


def culprit_text(finding: dict) -> str:
    culprit = finding.get("culprit") or {}
    location = culprit.get("location") or {}
    where = f"{Path(location['file']).name}:{location['line']}" if location.get("file") else "?"
    return f"rank {culprit.get('rank')}, {culprit.get('role')} (pid {culprit.get('pid')}), {where}"


def run_once(
    timeout_s: float, run: int, good_steps: int, kill_grace_s: float, tmp: Path, limit_s: float
) -> Sample:
    stall_dir = tmp / f"stall-{timeout_s:g}-{run}"
    report_dir = tmp / f"report-{timeout_s:g}-{run}"
    stall_dir.mkdir()
    command = [
        *hangdoctor_command(),
        "run",
        "--hang-timeout",
        f"{timeout_s:g}",
        "--on-hang",
        "kill",
        "--kill-grace",
        f"{kill_grace_s:g}",
        "--report-dir",
        str(report_dir),
        "--",
        sys.executable,
        "-m",
        "torch.distributed.run",
        "--standalone",
        "--nproc_per_node",
        "2",
        str(JOB),
        "--good-steps",
        str(good_steps),
        "--max-seconds",
        f"{limit_s:.0f}",
    ]
    done = run_command(command, limit_s, env={"STALL_DIR": str(stall_dir)}, mark=new_mark())
    what = f"S={timeout_s:g} run {run}"
    if done.returncode != HUNG_EXIT:
        raise BenchError(
            f"{what}: hangdoctor exited with {done.returncode}, not {HUNG_EXIT}: "
            f"{tail(done.stderr)}"
        )
    hang_report = report_dir / "hang-1" / "report.json"
    if not hang_report.exists():
        raise BenchError(f"{what}: no {hang_report}: {tail(done.stderr)}")
    stalled = stall_moment(stall_dir)
    reported = hang_report.stat().st_mtime
    report = json.loads(hang_report.read_text())
    hang = report.get("hang") or {}
    try:  # the job's start, as a wall-clock time, is in the evidence bundle beside the report
        evidence = json.loads((hang_report.parent / "evidence.json").read_text())
        started = float(evidence["job"]["started_at"])
    except (OSError, ValueError, KeyError, TypeError) as error:
        raise BenchError(f"{what}: no job start time in hang-1/evidence.json: {error!r}") from error
    if "last_progress_s" not in hang or "declared_s" not in hang:
        raise BenchError(f"{what}: the hang report has no hang times")
    if reported < stalled:
        raise BenchError(
            f"{what}: the hang was reported {stalled - reported:.1f} s before the "
            "job stalled (declared during start-up?)"
        )
    findings = report.get("findings") or []
    root = findings[0] if findings else {}
    progress = ((report.get("capture") or {}).get("job") or {}).get("progress") or []
    rank0 = [p.get("in_collective") for p in progress if p.get("rank") == 0]
    return Sample(
        timeout_s=timeout_s,
        run=run,
        latency_s=reported - stalled,
        seen_late_s=started + hang["last_progress_s"] - stalled,
        waited_s=hang["declared_s"] - hang["last_progress_s"],
        capture_s=reported - (started + hang["declared_s"]),
        wall_s=done.wall_s,
        category=root.get("category"),
        culprit=culprit_text(root) if root else "none",
        hang_kind=hang.get("kind"),
        rank0_in=rank0[0] if rank0 else None,
        processes=len(report.get("processes") or []),
    )


def run_benchmark(
    timeouts: list[float],
    runs: int,
    good_steps: int,
    kill_grace_s: float,
    time_limit_s: float,
    results: Results,
) -> None:
    deadline = time.monotonic() + time_limit_s
    with tempfile.TemporaryDirectory(prefix="hangdoctor-bench-detection-") as tmp:
        for run in range(runs):
            shift = run % len(timeouts)
            for timeout_s in timeouts[shift:] + timeouts[:shift]:
                left = deadline - time.monotonic()
                if left < MIN_RUN_S:
                    results.skipped += 1
                    continue
                sample = run_once(
                    timeout_s, run, good_steps, kill_grace_s, Path(tmp), min(RUN_TIMEOUT_S, left)
                )
                results.samples.append(sample)
                print(
                    f"  S={timeout_s:g} run {run}: latency {sample.latency_s:.2f} s "
                    f"(seen late {sample.seen_late_s:.2f}, waited {sample.waited_s:.2f}, "
                    f"capture+report {sample.capture_s:.2f}); {sample.category}; "
                    f"{sample.culprit}",
                    file=sys.stderr,
                    flush=True,
                )


def print_tables(results: Results, timeouts: list[float], runs: int) -> None:
    print(
        f"\n### `hangdoctor run` detection latency, idle hang in a 2-rank gloo job "
        f"(2 DataLoader workers per rank; up to {runs} runs per S, alternated; "
        f"{os.cpu_count()} CPUs)\n"
    )
    print(
        row(
            [
                "--hang-timeout S",
                "runs",
                "median latency s",
                "min s",
                "max s",
                "target s",
                "median - target s",
            ]
        )
    )
    print(row(["---:", "---:", "---:", "---:", "---:", "---:", "---:"]))
    for timeout_s in timeouts:
        latencies = [s.latency_s for s in results.of(timeout_s)]
        if not latencies:
            print(row([f"{timeout_s:g}", "0", "-", "-", "-", f"<= {timeout_s + MARGIN_S:g}", "-"]))
            continue
        print(
            row(
                [
                    f"{timeout_s:g}",
                    str(len(latencies)),
                    f"{median(latencies):.2f}",
                    f"{min(latencies):.2f}",
                    f"{max(latencies):.2f}",
                    f"<= {timeout_s + MARGIN_S:g}",
                    f"{median(latencies) - timeout_s - MARGIN_S:+.2f}",
                ]
            )
        )

    print("\n### Where the latency goes (medians, s)\n")
    print(
        row(["S", "last progress seen late by", "waited (threshold)", "capture + report", "total"])
    )
    print(row(["---:", "---:", "---:", "---:", "---:"]))
    for timeout_s in timeouts:
        samples = results.of(timeout_s)
        if samples:
            print(
                row(
                    [
                        f"{timeout_s:g}",
                        f"{median([s.seen_late_s for s in samples]):.2f}",
                        f"{median([s.waited_s for s in samples]):.2f}",
                        f"{median([s.capture_s for s in samples]):.2f}",
                        f"{median([s.latency_s for s in samples]):.2f}",
                    ]
                )
            )

    print("\n### What the hang reports found\n")
    print(
        row(
            [
                "S",
                "run",
                "processes captured",
                "hang kind",
                "root cause",
                "culprit",
                "rank 0 waits in",
                "run wall s",
            ]
        )
    )
    print(row(["---:", "---:", "---:", "---", "---", "---", "---", "---:"]))
    for sample in results.samples:
        print(
            row(
                [
                    f"{sample.timeout_s:g}",
                    str(sample.run),
                    str(sample.processes),
                    str(sample.hang_kind),
                    f"`{sample.category}`",
                    sample.culprit,
                    f"`{sample.rank0_in}`",
                    f"{sample.wall_s:.1f}",
                ]
            )
        )
    if results.skipped:
        print(f"\n{results.skipped} run(s) skipped: the time limit was reached.")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--timeouts", default="5,10", help="values of --hang-timeout S")
    parser.add_argument("--runs", type=int, default=3, help="runs per S (default 3)")
    parser.add_argument("--good-steps", type=int, default=8, help="steps before the stall")
    parser.add_argument("--kill-grace", type=float, default=3.0, help="hangdoctor --kill-grace")
    parser.add_argument(
        "--time-limit",
        type=float,
        default=900.0,
        help="seconds for the whole benchmark (default 900)",
    )
    args = parser.parse_args(argv)
    try:
        timeouts = [float(v) for v in args.timeouts.split(",") if v.strip()]
    except ValueError:
        parser.error("--timeouts: comma-separated numbers")
    if not timeouts or min(timeouts) <= 0 or args.runs < 1 or args.good_steps < 1:
        parser.error("--timeouts must be positive, --runs and --good-steps at least 1")
    terminate_on_sigterm()
    compile_like_an_install()
    results = Results()
    try:
        run_benchmark(
            timeouts, args.runs, args.good_steps, args.kill_grace, args.time_limit, results
        )
    except BenchError as error:
        print(f"bench_run_detection: error: {error}", file=sys.stderr)
        return 1
    except KeyboardInterrupt:
        print("bench_run_detection: interrupted", file=sys.stderr)
        return 130
    if not results.samples:
        print("bench_run_detection: error: no run fit in the time limit", file=sys.stderr)
        return 1
    print_tables(results, timeouts, args.runs)
    return 0


if __name__ == "__main__":
    sys.exit(main())

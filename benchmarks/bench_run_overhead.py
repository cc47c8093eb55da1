"""What does `hangdoctor run` cost a healthy training job?

Runs jobs/cpu_training_job.py (a seeded MLP on random data, DataLoader with 2 workers, ~10-15 s)
directly and under `hangdoctor run --report-dir TMP -- python job.py` (instrumented, the
default), and optionally under `hangdoctor run --no-instrument`, alternating the variants
round after round (the order rotates, so none always runs first on a noisy machine). The target
is a wall-time ratio hangdoctor/direct of at most 1.02, and a final loss identical to the bit.
It prints Markdown tables (no asserts on timings) and exits non-zero only when something fails
to run. Every run has a timeout and its whole process tree is killed on the way out. Usage:

    .venv/bin/python benchmarks/bench_run_overhead.py [--pairs 4] [--steps 300]
        [--variants direct,run,run-no-instrument]
"""

from __future__ import annotations

import argparse
import json
import os
import re
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
    row,
    run_command,
    tail,
    terminate_on_sigterm,
)

JOB = JOBS / "cpu_training_job.py"
TARGET_RATIO = 1.02
RUN_TIMEOUT_S = 300.0
VARIANTS = {
    "direct": "python job.py",
    "run": "hangdoctor run -- python job.py (instrumented)",
    "run-no-instrument": "hangdoctor run --no-instrument -- python job.py",
}
FINAL_LOSS = re.compile(r"^final loss (\S+)$", re.MULTILINE)
TRAIN_SECONDS = re.compile(r"^train seconds (\S+)$", re.MULTILINE)
JOB_SECONDS = re.compile(r"^job seconds (\S+)$", re.MULTILINE)


@dataclass
class Sample:
    """One run of one variant."""

    variant: str
    round: int
    wall_s: float
    train_s: float  # the training loop, timed by the job
    job_s: float  # the job's interpreter, from before `import torch` to its end
    cpu_s: float  # user + system of the whole tree (hangdoctor included)
    self_cpu_s: float  # user + system of the started process alone (hangdoctor's own)
    final_loss: str
    exit_code: int
    verdict: str | None = None
    steps_seen: int | None = None


@dataclass
class FixedCost:
    """A trivial job (`python -c` printing time.time()), run directly or under hangdoctor."""

    variant: str
    wall_s: float
    before_s: float  # from starting the command to the job's first line of Python
    after_s: float  # from there to the command's exit


@dataclass
class Results:
    samples: list[Sample] = field(default_factory=list)
    fixed: list[FixedCost] = field(default_factory=list)

    def of(self, variant: str) -> list[Sample]:
        return [s for s in self.samples if s.variant == variant]


def job_command(steps: int) -> list[str]:
    return [sys.executable, str(JOB), "--steps", str(steps), "--max-seconds", str(RUN_TIMEOUT_S)]


def run_once(variant: str, round_: int, steps: int, tmp: Path) -> Sample:
    """One run; raises BenchError when the job or hangdoctor fails."""
    report_dir = tmp / f"{variant}-{round_}"
    command = job_command(steps)
    if variant != "direct":
        flags = ["--no-instrument"] if variant == "run-no-instrument" else []
        command = [
            *hangdoctor_command(),
            "run",
            "--report-dir",
            str(report_dir),
            *flags,
            "--",
            *command,
        ]
    done = run_command(command, RUN_TIMEOUT_S)
    text = done.stdout.decode("utf-8", errors="replace")
    loss, seconds = FINAL_LOSS.search(text), TRAIN_SECONDS.search(text)
    job_seconds = JOB_SECONDS.search(text)
    if done.returncode != 0 or loss is None or seconds is None or job_seconds is None:
        raise BenchError(
            f"{variant} run {round_} exited with {done.returncode}: "
            f"{tail(done.stderr)} {tail(done.stdout, 500)}"
        )
    sample = Sample(
        variant,
        round_,
        done.wall_s,
        float(seconds.group(1)),
        float(job_seconds.group(1)),
        done.cpu_s,
        done.self_cpu_s,
        loss.group(1),
        done.returncode,
    )
    if variant != "direct":
        try:
            report = json.loads((report_dir / "report.json").read_text())
        except (OSError, ValueError) as error:
            raise BenchError(f"{variant} run {round_}: no readable report.json: {error}") from error
        sample.verdict = report.get("verdict")
        job = (report.get("capture") or {}).get("job") or {}
        sample.steps_seen = sum(p.get("steps", 0) for p in job.get("progress", []))
    return sample


TRIVIAL_JOB = "import time; print(repr(time.time()), flush=True)"


def fixed_cost_once(variant: str, index: int, tmp: Path) -> FixedCost:
    """hangdoctor's start-up and wind-down around a job that does nothing."""
    command = [sys.executable, "-c", TRIVIAL_JOB]
    if variant != "direct":
        flags = ["--no-instrument"] if variant == "run-no-instrument" else []
        command = [
            *hangdoctor_command(),
            "run",
            "--report-dir",
            str(tmp / f"trivial-{variant}-{index}"),
            *flags,
            "--",
            *command,
        ]
    started = time.time()
    done = run_command(command, 60.0)
    try:
        job_at = float(done.stdout.split()[0])
    except (IndexError, ValueError) as error:
        raise BenchError(
            f"trivial job under {variant}: exit {done.returncode}, {tail(done.stderr)}"
        ) from error
    return FixedCost(variant, done.wall_s, job_at - started, started + done.wall_s - job_at)


def run_benchmark(
    variants: list[str], pairs: int, steps: int, warmup: int, fixed_pairs: int, results: Results
) -> None:
    with tempfile.TemporaryDirectory(prefix="hangdoctor-bench-overhead-") as tmp:
        for index in range(fixed_pairs):
            for variant in variants if index % 2 == 0 else variants[::-1]:
                results.fixed.append(fixed_cost_once(variant, index, Path(tmp)))
        for index in range(warmup):
            run_once("direct", -1 - index, steps, Path(tmp))  # page cache, imports
        for round_ in range(pairs):
            shift = round_ % len(variants)
            for variant in variants[shift:] + variants[:shift]:
                sample = run_once(variant, round_, steps, Path(tmp))
                results.samples.append(sample)
                print(
                    f"  round {round_} {variant:<18} wall {sample.wall_s:6.2f} s  "
                    f"train loop {sample.train_s:6.2f} s  cpu {sample.cpu_s:6.2f} s",
                    file=sys.stderr,
                    flush=True,
                )


def paired_ratios(results: Results, variant: str, key: str) -> list[float]:
    """Per round: variant / direct of the same round."""
    direct = {s.round: getattr(s, key) for s in results.of("direct")}
    return [getattr(s, key) / direct[s.round] for s in results.of(variant) if s.round in direct]


def print_tables(results: Results, variants: list[str], pairs: int, steps: int) -> None:
    print(
        f"\n### `hangdoctor run` overhead on a CPU training job ({steps} steps, MLP, "
        f"DataLoader num_workers=2; {pairs} rounds, variants alternated; "
        f"{os.cpu_count()} CPUs)\n"
    )
    print(
        row(
            [
                "variant",
                "runs",
                "median wall s",
                "min s",
                "max s",
                "wall ratio (medians)",
                "wall ratio (median of pairs)",
                "target",
            ]
        )
    )
    print(row(["---", "---:", "---:", "---:", "---:", "---:", "---:", "---:"]))
    direct_wall = median([s.wall_s for s in results.of("direct")])
    for variant in variants:
        samples = results.of(variant)
        walls = [s.wall_s for s in samples]
        is_direct = variant == "direct"
        ratio = "1" if is_direct else f"{median(walls) / direct_wall:.3f}"
        paired = "1" if is_direct else f"{median(paired_ratios(results, variant, 'wall_s')):.3f}"
        target = "" if is_direct else f"<= {TARGET_RATIO:g}"
        print(
            row(
                [
                    f"`{VARIANTS[variant]}`",
                    str(len(samples)),
                    f"{median(walls):.2f}",
                    f"{min(walls):.2f}",
                    f"{max(walls):.2f}",
                    ratio,
                    paired,
                    target,
                ]
            )
        )

    print("\n### Where the wall time goes (medians)\n")
    print(
        row(
            [
                "variant",
                "job s (import torch to end)",
                "train loop s",
                "outside the job s (wall - job)",
                "CPU s, whole tree",
                "hangdoctor's own CPU s",
                "CPU ratio (median of pairs)",
                "train-loop ratio (median of pairs)",
            ]
        )
    )
    print(row(["---", "---:", "---:", "---:", "---:", "---:", "---:", "---:"]))
    for variant in variants:
        samples = results.of(variant)
        is_direct = variant == "direct"
        cpu = "1" if is_direct else f"{median(paired_ratios(results, variant, 'cpu_s')):.3f}"
        train = "1" if is_direct else f"{median(paired_ratios(results, variant, 'train_s')):.3f}"
        own = "-" if is_direct else f"{median([s.self_cpu_s for s in samples]):.2f}"
        print(
            row(
                [
                    f"`{variant}`",
                    f"{median([s.job_s for s in samples]):.2f}",
                    f"{median([s.train_s for s in samples]):.2f}",
                    f"{median([s.wall_s - s.job_s for s in samples]):.2f}",
                    f"{median([s.cpu_s for s in samples]):.2f}",
                    own,
                    cpu,
                    train,
                ]
            )
        )

    if results.fixed:
        count = len([f for f in results.fixed if f.variant == "direct"])
        print(
            f"\n### Fixed cost around a trivial job (`python -c` printing the time; "
            f"{count} pairs, alternated; medians)\n"
        )
        print(
            row(
                [
                    "variant",
                    "wall s",
                    "before the job starts s",
                    "after it prints s",
                    "wall - direct wall s",
                ]
            )
        )
        print(row(["---", "---:", "---:", "---:", "---:"]))
        base = median([f.wall_s for f in results.fixed if f.variant == "direct"])
        for variant in variants:
            fixed = [f for f in results.fixed if f.variant == variant]
            print(
                row(
                    [
                        f"`{variant}`",
                        f"{median([f.wall_s for f in fixed]):.3f}",
                        f"{median([f.before_s for f in fixed]):.3f}",
                        f"{median([f.after_s for f in fixed]):.3f}",
                        f"{median([f.wall_s for f in fixed]) - base:+.3f}",
                    ]
                )
            )

    losses = sorted({s.final_loss for s in results.samples})
    same = "yes" if len(losses) == 1 else "NO"
    print(
        f"\nFinal loss identical in all {len(results.samples)} runs: {same} ({', '.join(losses)})."
    )
    for variant in variants:
        if variant != "direct":
            samples = results.of(variant)
            print(
                f"`{variant}`: verdicts {sorted({str(s.verdict) for s in samples})}; "
                f"optimizer steps seen by the instrumentation "
                f"{sorted({s.steps_seen for s in samples})}."
            )
    walls = {v: ", ".join(f"{s.wall_s:.2f}" for s in results.of(v)) for v in variants}
    print("Wall times per round (s): " + "; ".join(f"{v}: {w}" for v, w in walls.items()) + ".")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--pairs", type=int, default=4, help="rounds of all variants (default 4)")
    parser.add_argument("--steps", type=int, default=300, help="training steps (default 300)")
    parser.add_argument("--warmup", type=int, default=1, help="untimed direct runs first")
    parser.add_argument(
        "--fixed-pairs",
        type=int,
        default=10,
        help="rounds of the trivial job that isolates the fixed cost (0: skip)",
    )
    parser.add_argument(
        "--variants",
        default="direct,run,run-no-instrument",
        help=f"comma-separated, from {', '.join(VARIANTS)}",
    )
    args = parser.parse_args(argv)
    variants = [v.strip() for v in args.variants.split(",") if v.strip()]
    if not set(variants) <= set(VARIANTS) or "direct" not in variants or len(variants) < 2:
        parser.error(f"--variants: 'direct' and at least one of {', '.join(VARIANTS)}")
    if args.pairs < 1 or args.steps < 1 or args.warmup < 0 or args.fixed_pairs < 0:
        parser.error(
            "--pairs and --steps must be at least 1, --warmup and --fixed-pairs at least 0"
        )
    terminate_on_sigterm()
    compile_like_an_install()
    results = Results()
    try:
        run_benchmark(variants, args.pairs, args.steps, args.warmup, args.fixed_pairs, results)
    except BenchError as error:
        print(f"bench_run_overhead: error: {error}", file=sys.stderr)
        return 1
    except KeyboardInterrupt:
        print("bench_run_overhead: interrupted", file=sys.stderr)
        return 130
    print_tables(results, variants, args.pairs, args.steps)
    return 0


if __name__ == "__main__":
    sys.exit(main())

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
from dataclasses import dataclass, field
from pathlib import Path

from _runbench import (
    JOBS,
    BenchError,
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


@dataclass
class Sample:
    """One run of one variant."""

    variant: str
    round: int
    wall_s: float
    train_s: float
    final_loss: str
    exit_code: int
    verdict: str | None = None
    steps_seen: int | None = None


@dataclass
class Results:
    samples: list[Sample] = field(default_factory=list)

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
        command = [*hangdoctor_command(), "run", "--report-dir", str(report_dir), *flags,
                   "--", *command]
    done = run_command(command, RUN_TIMEOUT_S)
    text = done.stdout.decode("utf-8", errors="replace")
    loss, seconds = FINAL_LOSS.search(text), TRAIN_SECONDS.search(text)
    if done.returncode != 0 or loss is None or seconds is None:
        raise BenchError(f"{variant} run {round_} exited with {done.returncode}: "
                         f"{tail(done.stderr)} {tail(done.stdout, 500)}")
    sample = Sample(variant, round_, done.wall_s, float(seconds.group(1)), loss.group(1),
                    done.returncode)
    if variant != "direct":
        try:
            report = json.loads((report_dir / "report.json").read_text())
        except (OSError, ValueError) as error:
            raise BenchError(f"{variant} run {round_}: no readable report.json: {error}") \
                from error
        sample.verdict = report.get("verdict")
        job = (report.get("capture") or {}).get("job") or {}
        sample.steps_seen = sum(p.get("steps", 0) for p in job.get("progress", []))
    return sample


def run_benchmark(variants: list[str], pairs: int, steps: int, warmup: int,
                  results: Results) -> None:
    with tempfile.TemporaryDirectory(prefix="hangdoctor-bench-overhead-") as tmp:
        for index in range(warmup):
            run_once("direct", -1 - index, steps, Path(tmp))  # page cache, imports
        for round_ in range(pairs):
            shift = round_ % len(variants)
            for variant in variants[shift:] + variants[:shift]:
                sample = run_once(variant, round_, steps, Path(tmp))
                results.samples.append(sample)
                print(f"  round {round_} {variant:<18} wall {sample.wall_s:6.2f} s  "
                      f"train loop {sample.train_s:6.2f} s", file=sys.stderr, flush=True)


def paired_ratios(results: Results, variant: str, key: str) -> list[float]:
    """Per round: variant / direct of the same round."""
    direct = {s.round: getattr(s, key) for s in results.of("direct")}
    return [getattr(s, key) / direct[s.round] for s in results.of(variant) if s.round in direct]


def print_tables(results: Results, variants: list[str], pairs: int, steps: int) -> None:
    print(f"\n### `hangdoctor run` overhead on a CPU training job ({steps} steps, MLP, "
          f"DataLoader num_workers=2; {pairs} rounds, variants alternated; "
          f"{os.cpu_count()} CPUs)\n")
    print(row(["variant", "runs", "median wall s", "min s", "max s", "median train loop s",
               "wall ratio (medians)", "wall ratio (median of pairs)", "target"]))
    print(row(["---", "---:", "---:", "---:", "---:", "---:", "---:", "---:", "---:"]))
    direct_wall = median([s.wall_s for s in results.of("direct")])
    for variant in variants:
        samples = results.of(variant)
        walls = [s.wall_s for s in samples]
        is_direct = variant == "direct"
        ratio = "1" if is_direct else f"{median(walls) / direct_wall:.3f}"
        paired = "1" if is_direct else f"{median(paired_ratios(results, variant, 'wall_s')):.3f}"
        target = "" if is_direct else f"<= {TARGET_RATIO:g}"
        print(row([f"`{VARIANTS[variant]}`", str(len(samples)), f"{median(walls):.2f}",
                   f"{min(walls):.2f}", f"{max(walls):.2f}",
                   f"{median([s.train_s for s in samples]):.2f}", ratio, paired, target]))
    losses = sorted({s.final_loss for s in results.samples})
    same = "yes" if len(losses) == 1 else "NO"
    print(f"\nFinal loss identical in all {len(results.samples)} runs: {same} "
          f"({', '.join(losses)}).")
    for variant in variants:
        if variant == "direct":
            continue
        samples = results.of(variant)
        train = median(paired_ratios(results, variant, "train_s"))
        print(f"`{variant}`: train-loop ratio (median of pairs) {train:.3f}; verdicts "
              f"{sorted({str(s.verdict) for s in samples})}; optimizer steps seen by the "
              f"instrumentation {sorted({s.steps_seen for s in samples})}.")
    walls = {v: ", ".join(f"{s.wall_s:.2f}" for s in results.of(v)) for v in variants}
    print("Wall times per round (s): " + "; ".join(f"{v}: {w}" for v, w in walls.items()) + ".")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--pairs", type=int, default=4, help="rounds of all variants (default 4)")
    parser.add_argument("--steps", type=int, default=300, help="training steps (default 300)")
    parser.add_argument("--warmup", type=int, default=1, help="untimed direct runs first")
    parser.add_argument("--variants", default="direct,run,run-no-instrument",
                        help=f"comma-separated, from {', '.join(VARIANTS)}")
    args = parser.parse_args(argv)
    variants = [v.strip() for v in args.variants.split(",") if v.strip()]
    if not set(variants) <= set(VARIANTS) or "direct" not in variants or len(variants) < 2:
        parser.error(f"--variants: 'direct' and at least one of {', '.join(VARIANTS)}")
    if args.pairs < 1 or args.steps < 1 or args.warmup < 0:
        parser.error("--pairs and --steps must be at least 1, --warmup at least 0")
    terminate_on_sigterm()
    results = Results()
    try:
        run_benchmark(variants, args.pairs, args.steps, args.warmup, results)
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

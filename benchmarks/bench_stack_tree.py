"""The stack tree at scale: build it (report.stack_tree) and draw it (terminal, report.md,
report.html) from the report of bench_cross_rank.py's synthetic job (every rank in all_reduce
but one, blocked reading a socket), and compare with the diagnosis that made the report.
Ratios, medians of alternated runs; nothing asserts on times. Target: built in well under a
second at 1,024 ranks.

    python benchmarks/bench_stack_tree.py [--ranks 64 1024] [--runs 5]
"""

from __future__ import annotations

import argparse
import io
import statistics
import sys
import time
from pathlib import Path

import jinja2
from bench_cross_rank import synthetic_job
from rich.console import Console

from hangdoctor.i18n import _, _n
from hangdoctor.pipeline import diagnose
from hangdoctor.report.model import Report, StackFrame, ThreadReport
from hangdoctor.report.render_stack_tree import stack_tree_lines, stack_tree_renderable
from hangdoctor.report.stack_tree import StackTree, build_stack_tree

TEMPLATES = Path(__file__).resolve().parents[1] / "src" / "hangdoctor" / "report" / "templates"


_TORCH = "/opt/venv/lib/python3.11/site-packages/torch"
_THREADING = "/usr/lib/python3.11/threading.py"


def heavier(report: Report) -> Report:
    """The report as a real job's would be: every rank's main thread 30 frames of torch deeper
    (a model's forward), and 4 helper threads a rank (pin-memory, gloo, a watchdog) of 12
    frames each: ten times the frames of the synthetic report."""
    forward = [
        StackFrame(file=f"{_TORCH}/nn/modules/module.py", line=1700 + i, function="_call_impl")
        for i in range(30)
    ]
    helper = [StackFrame(file=_THREADING, line=300 + i, function="wait") for i in range(9)]
    helper += [
        StackFrame(file=f"{_TORCH}/utils/data/_utils/pin_memory.py", line=52, function="loop"),
        StackFrame(file=_THREADING, line=1010, function="run"),
        StackFrame(file=_THREADING, line=1073, function="_bootstrap_inner"),
    ]
    processes = []
    for process in report.processes:
        if process.rank is None:
            processes.append(process)
            continue
        main = process.threads[0]
        threads = [main.model_copy(update={"stack": [*main.stack[:-1], *forward, main.stack[-1]]})]
        threads += [
            ThreadReport(tid=process.pid * 10 + i, name=f"helper-{i}", stack=helper)
            for i in range(4)
        ]
        processes.append(process.model_copy(update={"threads": threads}))
    return report.model_copy(update={"processes": processes})


def _drawn(tree: StackTree, page: jinja2.Template) -> tuple[int, int, int]:
    """The tree drawn three ways; the number of lines (terminal, Markdown) and HTML bytes."""
    out = io.StringIO()
    Console(file=out, width=140, color_system=None).print(stack_tree_renderable(tree))
    return len(out.getvalue().splitlines()), len(stack_tree_lines(tree)), len(page.render(t=tree))


def _timed(report: Report, page: jinja2.Template) -> tuple[float, float, tuple[int, int, int]]:
    started = time.perf_counter()
    tree = build_stack_tree(report)
    built = time.perf_counter() - started
    started = time.perf_counter()
    sizes = _drawn(tree, page)
    return built, time.perf_counter() - started, sizes


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--ranks", type=int, nargs="+", default=[64, 1024])
    parser.add_argument("--runs", type=int, default=5)
    args = parser.parse_args()
    env = jinja2.Environment(loader=jinja2.FileSystemLoader(TEMPLATES), autoescape=True)
    env.globals.update(_=_, _n=_n)
    page = env.from_string('{% from "stack_tree.html.j2" import stack_tree %}{{ stack_tree(t) }}')
    cases = [(ranks, variant) for ranks in args.ranks for variant in ("synthetic", "heavier")]
    bundles = {ranks: synthetic_job(ranks, ranks // 3) for ranks in args.ranks}
    reports: dict[tuple[int, str], Report] = {}
    diagnose_s: dict[int, list[float]] = {ranks: [] for ranks in args.ranks}
    build_s: dict[tuple[int, str], list[float]] = {case: [] for case in cases}
    draw_s: dict[tuple[int, str], list[float]] = {case: [] for case in cases}
    sizes: dict[tuple[int, str], tuple[int, int, int]] = {}
    for _round in range(args.runs):  # the cases alternate within each round
        for ranks in args.ranks:
            started = time.perf_counter()
            report = diagnose(bundles[ranks])
            diagnose_s[ranks].append(time.perf_counter() - started)
            reports[ranks, "synthetic"] = report
            reports[ranks, "heavier"] = heavier(report)
            for variant in ("synthetic", "heavier"):
                case = (ranks, variant)
                built, drawn, sizes[case] = _timed(reports[case], page)
                build_s[case].append(built)
                draw_s[case].append(drawn)
    print(
        "| ranks | report | threads | frames | tree build median s | "
        "build / diagnose (medians; the synthetic job's diagnosis) | "
        "draw (terminal + md + html) median s | terminal lines | report.md lines | "
        "HTML bytes | target |"
    )
    print("| ---: | --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | --- |")
    for ranks, variant in cases:
        report = reports[ranks, variant]
        threads = sum(len(p.threads) for p in report.processes)
        frames = sum(len(t.stack) for p in report.processes for t in p.threads)
        build = statistics.median(build_s[ranks, variant])
        target = f"< 1 s: {'met' if build < 1 else '**missed**'}" if ranks == 1024 else ""
        terminal, markdown, html = sizes[ranks, variant]
        print(
            f"| {ranks:,} | {variant} | {threads:,} | {frames:,} | {build:.4f} | "
            f"{build / statistics.median(diagnose_s[ranks]):.3f} | "
            f"{statistics.median(draw_s[ranks, variant]):.4f} | {terminal} | {markdown} | "
            f"{html:,} | {target} |"
        )
    print(
        "\npipeline.diagnose of the synthetic job, median s: "
        + ", ".join(f"{r:,} ranks {statistics.median(s):.3f}" for r, s in diagnose_s.items())
    )
    if len(args.ranks) > 1:
        low, high = min(args.ranks), max(args.ranks)
        for variant in ("synthetic", "heavier"):
            scale = statistics.median(build_s[high, variant]) / statistics.median(
                build_s[low, variant]
            )
            print(
                f"{variant}: build time {high:,} / {low:,} ranks: {scale:.1f} "
                f"(linear: {high / low:.0f})"
            )
    return 0


if __name__ == "__main__":
    sys.exit(main())

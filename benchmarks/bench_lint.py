"""Speed of `hangdoctor lint`, measured side by side with merely parsing the same files.

    python benchmarks/bench_lint.py [--target DIR] [--rounds N] [--throughput]

The target (default: the installed `torch` package, ~2,400 files) is linted by the real CLI,
`hangdoctor lint --no-config --format json --jobs 0 DIR` (every available core), and parsed by a
plain loop of `ast.parse` over the very same files in a child pinned to one core. The two
alternate, N rounds each, so both see the same machine load; each round reports wall time and
the children's CPU time, and the summary the median ratio lint / parse (the target of issue 12:
at most 1.0 on a 2-core machine). Interpreter start-up is counted on both sides; the CLI's
(imports, process pool, JSON output) is part of what a user waits for. hangdoctor's modules are
byte-compiled first, as a wheel install does (benchmarks/_runbench.py).

`--throughput` adds the in-process, one-core table of earlier rounds (files/s, lines/s) over this
repository's src/ and tests/ and, when present, /tmp/lintcorpus (benchmarks/lint_corpus.py).
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import os
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from _runbench import compile_like_an_install

from hangdoctor.lint.config import LintConfig
from hangdoctor.lint.runner import Linter, available_cores, iter_files

REPO = Path(__file__).resolve().parent.parent
REAL_CORPUS = Path("/tmp/lintcorpus")
#: Limit for one measured child (the lint of ~2,400 files takes seconds; a wedged run must not
#: wedge the benchmark).
CHILD_TIMEOUT_S = 900

#: The parse side: read the file list, pin to one core, parse every file.
_PARSE_CHILD = """
import ast, os, sys, warnings
if hasattr(os, "sched_setaffinity"):
    os.sched_setaffinity(0, {min(os.sched_getaffinity(0))})
warnings.simplefilter("ignore")
for line in open(sys.argv[1], encoding="utf-8"):
    path = line.rstrip("\\n")
    try:
        with open(path, "rb") as handle:
            ast.parse(handle.read())
    except (SyntaxError, ValueError):
        pass
"""


def torch_package() -> Path:
    spec = importlib.util.find_spec("torch")
    if spec is None or not spec.submodule_search_locations:
        raise SystemExit("torch is not installed in this environment")
    return Path(next(iter(spec.submodule_search_locations)))


def _timed(command: list[str]) -> tuple[float, float]:
    """(wall s, CPU s of the child and its descendants) of one run of `command`."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    start = time.perf_counter()
    done = subprocess.run(
        command,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        timeout=CHILD_TIMEOUT_S,
        check=False,
    )
    wall = time.perf_counter() - start
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    if done.returncode not in (0, 1):  # lint exits 1 when it finds something
        raise SystemExit(f"{command[:3]} failed: {done.stderr.decode()[-2000:]}")
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    return wall, cpu


def side_by_side(target: Path, rounds: int) -> dict[str, object]:
    files = list(iter_files([target], LintConfig()))
    lines = sum(path.read_bytes().count(b"\n") for path in files)
    with tempfile.NamedTemporaryFile("w", suffix=".txt", delete=False) as listing:
        listing.write("".join(f"{path}\n" for path in files))
    parse = [sys.executable, "-c", _PARSE_CHILD, listing.name]
    lint = [
        sys.executable,
        "-m",
        "hangdoctor",
        "lint",
        "--no-config",
        "--format",
        "json",
        "--jobs",
        "0",
        str(target),
    ]
    results = []
    try:
        for number in range(rounds):
            load = os.getloadavg()[0]
            # Alternate which side goes first (the first reader of a round may find the page
            # cache colder, or the machine busier).
            if number % 2 == 0:
                parse_wall, parse_cpu = _timed(parse)
                lint_wall, lint_cpu = _timed(lint)
            else:
                lint_wall, lint_cpu = _timed(lint)
                parse_wall, parse_cpu = _timed(parse)
            results.append(
                {
                    "load": load,
                    "parse_wall": parse_wall,
                    "parse_cpu": parse_cpu,
                    "lint_wall": lint_wall,
                    "lint_cpu": lint_cpu,
                    "ratio": lint_wall / parse_wall,
                }
            )
    finally:
        os.unlink(listing.name)
    return {
        "target": str(target),
        "files": len(files),
        "lines": lines,
        "cores": available_cores(),
        "rounds": results,
        "median_ratio": statistics.median(r["ratio"] for r in results),
    }


def render_side_by_side(report: dict[str, object]) -> str:
    rounds = report["rounds"]
    assert isinstance(rounds, list)
    out = [
        f"target: {report['target']} ({report['files']} files, {report['lines']} lines); "
        f"lint on {report['cores']} cores, parse on 1",
        "",
        "| round | load avg | parse wall s | lint wall s | lint / parse (wall) | "
        "parse CPU s | lint CPU s | cores lint got (CPU / wall) |",
        "|---:|---:|---:|---:|---:|---:|---:|---:|",
    ]
    for number, r in enumerate(rounds, start=1):
        out.append(
            f"| {number} | {r['load']:.1f} | {r['parse_wall']:.2f} | {r['lint_wall']:.2f} | "
            f"{r['ratio']:.2f} | {r['parse_cpu']:.2f} | {r['lint_cpu']:.2f} | "
            f"{r['lint_cpu'] / r['lint_wall']:.2f} |"
        )
    out.append("")
    out.append(f"median lint / parse wall-time ratio: {report['median_ratio']:.2f}")
    return "\n".join(out) + "\n"


def throughput(name: str, roots: list[Path]) -> str:
    """One row of the in-process, one-process table (files/s, lines/s)."""
    files = list(iter_files(roots, LintConfig()))
    lines = sum(path.read_bytes().count(b"\n") for path in files)
    linter = Linter()
    passes, elapsed, found = 0, 0.0, 0
    while elapsed < 2.0:
        start = time.perf_counter()
        found = sum(len(linter.lint_file(path)) for path in files)
        elapsed += time.perf_counter() - start
        passes += 1
    seconds = elapsed / passes
    return (
        f"| {name} | {len(files)} | {lines} | {seconds:.3f} | {len(files) / seconds:.0f} | "
        f"{lines / seconds:.0f} | {found} |"
    )


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--target", type=Path, help="default: the installed torch package")
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--throughput", action="store_true")
    parser.add_argument("--json", type=Path, help="also write the side-by-side data here")
    options = parser.parse_args(argv)
    compile_like_an_install()
    report = side_by_side(options.target or torch_package(), options.rounds)
    print(render_side_by_side(report))
    if options.json:
        options.json.write_text(json.dumps(report, indent=1) + "\n")
    if options.throughput:
        print(
            "| corpus (one process, in-process) | files | lines | s/pass | files/s | "
            "lines/s | findings |"
        )
        print("|---|---:|---:|---:|---:|---:|---:|")
        print(throughput("hangdoctor src/ + tests/", [REPO / "src", REPO / "tests"]))
        if REAL_CORPUS.is_dir():
            print(throughput("real training code (/tmp/lintcorpus)", [REAL_CORPUS]))
    return 0


if __name__ == "__main__":
    sys.exit(main())

"""Speed of `hangdoctor lint`, in-process on one core: files/s and lines/s as a Markdown table.

    python benchmarks/bench_lint.py [CORPUS_DIR ...] [--repeat N]

Default corpus: this repository's src/ and tests/, plus /tmp/lintcorpus when present (the real
public training code of LINT_PRECISION.md; rebuild it with benchmarks/lint_corpus.py). Small
corpora are linted repeatedly until at least ~2 s have been measured, for a stable rate. The
target (issue 6) is >= 200 files/s; nothing here asserts it, the table reports it.
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from pathlib import Path

from hangdoctor.lint.config import LintConfig
from hangdoctor.lint.runner import Linter, iter_files

REPO = Path(__file__).resolve().parent.parent
REAL_CORPUS = Path("/tmp/lintcorpus")


def measure(name: str, roots: list[Path], repeat: int | None) -> tuple[str, int, int, float, int]:
    """(name, files, lines, seconds per pass, findings) for one corpus."""
    files = list(iter_files(roots, LintConfig()))
    lines = sum(path.read_bytes().count(b"\n") for path in files)
    linter = Linter()
    passes, elapsed, found = 0, 0.0, 0
    while True:
        start = time.perf_counter()
        found = sum(len(linter.lint_file(path)) for path in files)
        elapsed += time.perf_counter() - start
        passes += 1
        if (repeat is not None and passes >= repeat) or (repeat is None and elapsed >= 2.0):
            break
    return name, len(files), lines, elapsed / passes, found


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("corpus", nargs="*", type=Path)
    parser.add_argument("--repeat", type=int, help="passes per corpus (default: >= 2 s)")
    options = parser.parse_args(argv)
    if hasattr(os, "sched_setaffinity"):
        os.sched_setaffinity(0, {min(os.sched_getaffinity(0))})  # one core
    if options.corpus:
        corpora = [(str(p), [p]) for p in options.corpus]
    else:
        corpora = [("hangdoctor src/ + tests/", [REPO / "src", REPO / "tests"])]
        if REAL_CORPUS.is_dir():
            corpora.append(("real training code (/tmp/lintcorpus)", [REAL_CORPUS]))
    print("| corpus | files | lines | s/pass | files/s | lines/s | findings |")
    print("|---|---:|---:|---:|---:|---:|---:|")
    for name, roots in corpora:
        name, files, lines, seconds, found = measure(name, roots, options.repeat)
        print(f"| {name} | {files} | {lines} | {seconds:.3f} | {files / seconds:.0f} | "
              f"{lines / seconds:.0f} | {found} |")
    return 0


if __name__ == "__main__":
    sys.exit(main())

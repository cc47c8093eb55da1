"""Programs a generator writes (the exception matrix, the wait matrix): written again, or
checked against what the generator would write."""

from __future__ import annotations

import argparse
from collections.abc import Mapping
from pathlib import Path

from tests.scenarios.scenario import PROGRAMS


def out_of_date(folder: Path, expected: Mapping[Path, str]) -> list[Path]:
    """Programs that differ from what the generator writes, are missing, or are left over."""
    stale = [p for p, text in expected.items() if not p.exists() or p.read_text() != text]
    return stale + [p for p in folder.glob("*.py") if p not in expected]


def write_or_check(description: str, folder: Path, expected: Mapping[Path, str]) -> int:
    """The generators' command line: write the programs, or with --check say which are out of
    date (exit 1)."""
    parser = argparse.ArgumentParser(description=description)
    parser.add_argument("--check", action="store_true", help="only say whether files are current")
    args = parser.parse_args()
    if args.check:
        stale = out_of_date(folder, expected)
        for path in stale:
            print(f"out of date: {path.relative_to(PROGRAMS)}")
        return 1 if stale else 0
    folder.mkdir(exist_ok=True)
    for path in folder.glob("*.py"):
        if path not in expected:
            path.unlink()
    for path, text in expected.items():
        path.write_text(text)
    print(f"wrote {len(expected)} programs to {folder}")
    return 0

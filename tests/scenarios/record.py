"""Record scenarios live, for the replay test: each run under `hangdoctor run`, its evidence kept
in `recordings/NAME.json.xz` (see recording.py).

    python tests/scenarios/record.py NAME...      # these scenarios (exact names)
    python tests/scenarios/record.py --all        # the whole catalogue (~30 min on 2 cores)
    python tests/scenarios/record.py --stale      # list recordings older than their program
    python tests/scenarios/record.py --stale --record   # ...and record those again

A run that is not diagnosed as the catalogue expects is tried again (`--tries`, each miss
printed); if no try is right, the old recording stays and the exit code is 1. Each scenario's
first try is also kept as the live suite keeps its outcomes, so that `write_readme.py --save`
records a recording run of the whole catalogue as a run of the suite. A known miss (`xfail`) is recorded as it
comes out. Two jobs run at a time by default (`-j`), as the live suite runs them.
"""

from __future__ import annotations

import argparse
import shutil
import sys
import tempfile
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from tests.scenarios import modes
from tests.scenarios.catalog import BY_NAME, CATALOG
from tests.scenarios.harness import run_scenario, save_outcome, session_outcomes_dir
from tests.scenarios.recording import RECORDINGS, is_stale, save
from tests.scenarios.scenario import Scenario


def record_one(scenario: Scenario, scratch: Path, tries: int, directory: Path) -> str | None:
    """Run `scenario` live until it is diagnosed as expected (or is a known miss) and keep that
    run; returns why nothing was kept, or None."""
    why = "not run"
    for attempt in range(1, tries + 1):
        work_dir = scratch / f"{scenario.name}-{attempt}"
        outcome = run_scenario(scenario, work_dir, modes.RUN)
        if attempt == 1:  # the first try is a live run of the suite's: its table row
            save_outcome(outcome, session_outcomes_dir())
        report_dir = work_dir / "report"
        captured = (report_dir / "evidence.json").is_file()
        if captured and (outcome.correct or scenario.xfail):
            save(scenario, report_dir, work_dir, outcome, directory)
            return None
        why = outcome.explain() if captured else outcome.problem or "no evidence.json was left"
        if attempt < tries:
            print(f"    {scenario.name}: try {attempt} missed, again: {why}", file=sys.stderr)
    return why


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("names", nargs="*", help="scenarios to record (exact names)")
    parser.add_argument("--all", action="store_true", help="record every scenario")
    parser.add_argument("--stale", action="store_true", help="list the stale recordings")
    parser.add_argument("--record", action="store_true", help="with --stale: record them again")
    parser.add_argument("-j", "--jobs", type=int, default=2, help="jobs at a time (default 2)")
    parser.add_argument("--tries", type=int, default=2, help="live runs at most per scenario")
    parser.add_argument("--into", type=Path, default=RECORDINGS, help=argparse.SUPPRESS)
    args = parser.parse_args()
    unknown = [n for n in args.names if n not in BY_NAME]
    if unknown:
        parser.error(f"no scenario named {', '.join(unknown)}")
    if args.stale:
        stale = [s for s in CATALOG if is_stale(s, args.into)]
        for scenario in stale:
            print(scenario.name)
        print(f"{len(stale)} of {len(CATALOG)} recordings are missing or stale", file=sys.stderr)
        if not args.record:
            return 1 if stale else 0
        chosen = stale
    elif args.all:
        chosen = list(CATALOG)
    elif args.names:
        chosen = [BY_NAME[n] for n in args.names]
    else:
        parser.error("name scenarios, or give --all or --stale")
    if (why := modes.unavailable(modes.RUN)) is not None:  # pragma: no cover - run needs nothing
        print(f"record: {why}", file=sys.stderr)
        return 2
    if args.all:  # a run of the whole catalogue: its table starts afresh
        shutil.rmtree(session_outcomes_dir(), ignore_errors=True)
    failed = 0
    with (
        tempfile.TemporaryDirectory(prefix="hd-record-") as scratch,
        ThreadPoolExecutor(max_workers=max(1, args.jobs)) as pool,
    ):
        futures = {
            s.name: pool.submit(record_one, s, Path(scratch), args.tries, args.into) for s in chosen
        }
        for number, (name, future) in enumerate(futures.items(), start=1):
            why = future.result()
            failed += why is not None
            status = "recorded" if why is None else f"NOT recorded: {why}"
            print(f"[{number}/{len(chosen)}] {name}: {status}", file=sys.stderr, flush=True)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())

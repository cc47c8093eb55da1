"""tests/scenarios/README.md, generated from the last run's outcomes; never edited by hand.

    python tests/scenarios/write_readme.py --save   # keep the run that just ended, then write
    python tests/scenarios/write_readme.py          # write README.md from last_run.json
    python tests/scenarios/write_readme.py --check  # exit 1 if README.md is not up to date
    python tests/scenarios/write_readme.py --save --mode run-noptrace  # keep a no-ptrace run
    python tests/scenarios/write_readme.py --summary --mode watch-noptrace  # its one line

`--save` reads the outcomes the last `pytest -m scenario` (or `run_suite.py`) left in
`.pytest_cache/hangdoctor-scenarios/` into `last_run.json`, with the commit that ran; `.ci/run`
does it after the scenario suite. tests/unit/test_scenarios_readme.py holds README.md to it.
With `--mode` (tests/scenarios/modes.py) the same is done for a run in that mode, from
`.pytest_cache/hangdoctor-scenarios.MODE/` into `last_run.MODE.json`; README.md then gets a
section per no-ptrace mode recorded: how many were diagnosed right, the misses, the table.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from tests.scenarios import modes
from tests.scenarios.catalog import BY_NAME, CATALOG
from tests.scenarios.harness import OUTCOMES_DIR, Outcome, load_outcomes, table

HERE = Path(__file__).resolve().parent
LAST_RUN = HERE / "last_run.json"
README = HERE / "README.md"
_FIELDS = (
    "seconds",
    "verdict",
    "category",
    "rank",
    "location",
    "severe",
    "verdict_ok",
    "category_ok",
    "rank_ok",
    "location_ok",
    "leftovers",
    "problem",
)


def _row(outcome: Outcome) -> dict[str, Any]:
    return {"name": outcome.scenario.name, **{f: getattr(outcome, f) for f in _FIELDS}}


def _commit() -> str:
    try:
        done = subprocess.run(
            ["git", "rev-parse", "--short", "HEAD"],
            cwd=HERE,
            timeout=10,
            capture_output=True,
            text=True,
            check=False,
        )
    except (OSError, subprocess.TimeoutExpired):
        return "unknown"
    return done.stdout.strip() or "unknown"


def save(directory: Path = OUTCOMES_DIR, target: Path = LAST_RUN) -> int:
    """Keep the outcomes found in `directory` as the last run (in `target`); how many."""
    outcomes = load_outcomes(directory, BY_NAME) if directory.is_dir() else []
    if outcomes:
        record = {"commit": _commit(), "outcomes": [_row(o) for o in outcomes]}
        target.write_text(json.dumps(record, indent=1) + "\n", encoding="utf-8")
    return len(outcomes)


def last_run(path: Path = LAST_RUN) -> tuple[str, list[Outcome]]:
    """The commit of the last recorded run (in `path`) and its outcomes, in catalog order."""
    record = json.loads(path.read_text(encoding="utf-8"))
    found = []
    for row in record["outcomes"]:
        scenario = BY_NAME.get(row["name"])
        if scenario is not None:
            found.append(Outcome(scenario, **{f: row[f] for f in _FIELDS}))
    order = list(BY_NAME)
    return record["commit"], sorted(found, key=lambda o: order.index(o.scenario.name))


#: How each no-ptrace mode is named in README.md and in its summary line.
_WITHOUT_PTRACE = {
    modes.RUN_NOPTRACE: "without ptrace, under `hangdoctor run`",
    modes.WATCH_NOPTRACE: "without ptrace, under `HANGDOCTOR_WATCH=1` (no wrapper)",
}


def _miss(outcome: Outcome) -> str:
    return f"{outcome.scenario.name} ({outcome.got()})"


def summary(mode: str, commit: str, outcomes: list[Outcome]) -> str:
    """One line for RESULTS.md: `N/M right <how> (commit C); misses: name (what it said), ...`."""
    right = sum(o.correct for o in outcomes)
    misses = [_miss(o) for o in outcomes if not o.correct]
    share = f" ({100 * right / len(outcomes):.0f}%)" if outcomes else ""
    return (
        f"{right}/{len(outcomes)}{share} right {_WITHOUT_PTRACE.get(mode, 'under `hangdoctor run`')} "
        f"(commit `{commit}`); misses: {', '.join(misses) if misses else 'none'}"
    )


def mode_section(mode: str, path: Path) -> list[str]:
    """README.md's section for a no-ptrace mode's recorded run; nothing when none is."""
    if not path.is_file():
        return []
    commit, outcomes = last_run(path)
    return [
        f"## {_WITHOUT_PTRACE[mode][0].upper()}{_WITHOUT_PTRACE[mode][1:]}",
        "",
        f"`HANGDOCTOR_SUITE_MODE={mode}` (tests/scenarios/modes.py): py-spy cannot attach, so "
        "the diagnosis rests on the job's own instrumentation (status files, faulthandler "
        "stacks, Flight Recorder) and /proc.",
        "",
        summary(mode, commit, outcomes),
        "",
        table(outcomes),
        "",
    ]


def render() -> str:
    """The whole README.md."""
    commit, outcomes = last_run()
    not_run = len(CATALOG) - len(outcomes)
    return "\n".join(
        [
            "# Scenario suite: the last run",
            "",
            "<!-- generated by `python tests/scenarios/write_readme.py` from last_run.json; "
            "do not edit -->",
            "",
            "Each scenario is a real training program run under `hangdoctor run --on-hang kill`; "
            "the test checks the verdict, the root cause's category, the culprit's rank and line "
            "(marked `# HANG:` in the program) and that no process is left behind. What the "
            "corpus is and how it was written: [docs/scenarios.md](../../docs/scenarios.md).",
            "",
            "Run it with `pytest -m scenario -n 2` (two at a time) or "
            "`python tests/scenarios/run_suite.py [NAME...]`, then "
            "`python tests/scenarios/write_readme.py --save` to record it here.",
            "",
            f"Last recorded run: commit `{commit}`, {len(outcomes)} scenarios"
            + (
                f" ({not_run} scenario(s) of the catalog were not in that run)."
                if not_run
                else " (the whole catalog)."
            ),
            "",
            table(outcomes),
            "",
            *(
                line
                for mode in _WITHOUT_PTRACE
                for line in mode_section(mode, modes.last_run_file(LAST_RUN, mode))
            ),
        ]
    )


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--save", action="store_true", help="record the run that just ended")
    parser.add_argument("--check", action="store_true", help="exit 1 if README.md is stale")
    parser.add_argument(
        "--mode", choices=modes.MODES, default=modes.RUN, help="the run to --save or --summary"
    )
    parser.add_argument(
        "--summary", action="store_true", help="print the mode's one-line result and stop"
    )
    args = parser.parse_args()
    recorded = modes.last_run_file(LAST_RUN, args.mode)
    kept = modes.outcomes_dir(OUTCOMES_DIR, args.mode)
    if args.save and save(kept, recorded) == 0:
        print(f"write_readme: no outcomes in {kept}: run the scenarios first", file=sys.stderr)
        return 1
    if args.summary:
        if not recorded.is_file():
            print(f"write_readme: {recorded.name} does not exist: --save it first", file=sys.stderr)
            return 1
        print(summary(args.mode, *last_run(recorded)))
        return 0
    if args.check:
        if README.read_text(encoding="utf-8") != render():
            print(
                "tests/scenarios/README.md is out of date: run "
                "`python tests/scenarios/write_readme.py`",
                file=sys.stderr,
            )
            return 1
        return 0
    README.write_text(render(), encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main())

"""Run the whole scenario catalog (sequentially) under hangdoctor and print the accuracy table.

    python tests/scenarios/run_suite.py                 # every scenario
    python tests/scenarios/run_suite.py ddp_ worker_    # those whose name contains a word
    python tests/scenarios/run_suite.py --keep DIR      # keep each job's report in DIR/NAME
    python tests/scenarios/run_suite.py --mode run-noptrace   # as without CAP_SYS_PTRACE
    python tests/scenarios/run_suite.py --mode watch-noptrace # no wrapper: HANGDOCTOR_WATCH=1

`--mode` (default: HANGDOCTOR_SUITE_MODE, else `run`) is explained in modes.py. Each outcome is
also kept where `write_readme.py --save --mode MODE` finds it.

Exit code 0 when every scenario not marked as a known miss is diagnosed correctly; 2 when the mode
cannot run on this machine.
"""

from __future__ import annotations

import argparse
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from tests.scenarios import modes
from tests.scenarios.catalog import CATALOG
from tests.scenarios.harness import OUTCOMES_DIR, run_scenario, save_outcome, table


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("names", nargs="*", help="run only scenarios whose name contains one")
    parser.add_argument("--keep", type=Path, help="keep every job's files under this folder")
    parser.add_argument(
        "--mode", choices=modes.MODES, help=f"how to launch each job (default: ${modes.MODE_ENV})"
    )
    args = parser.parse_args()
    try:
        mode = args.mode or modes.current_mode()
    except modes.ModeError as error:
        parser.error(str(error))
    if (why := modes.unavailable(mode)) is not None:
        print(f"run_suite: {why}", file=sys.stderr)
        return 2
    kept = modes.outcomes_dir(OUTCOMES_DIR, mode)
    chosen = [s for s in CATALOG if not args.names or any(n in s.name for n in args.names)]
    outcomes = []
    with tempfile.TemporaryDirectory(prefix="hd-scenarios-") as scratch:
        root = args.keep or Path(scratch)
        for number, scenario in enumerate(chosen, start=1):
            outcome = run_scenario(scenario, root / scenario.name, mode)
            outcomes.append(outcome)
            save_outcome(outcome, kept)
            status = "ok" if outcome.correct else "MISS"
            print(
                f"[{number}/{len(chosen)}] {scenario.name}: {status} ({outcome.seconds:.1f} s)"
                + ("" if outcome.correct else f"\n    {outcome.explain()}"),
                file=sys.stderr,
                flush=True,
            )
    print(table(outcomes))
    unexpected = [o for o in outcomes if not o.correct and not o.scenario.xfail]
    return 1 if unexpected else 0


if __name__ == "__main__":
    sys.exit(main())

"""Run the whole scenario catalog (sequentially) under hangdoctor and print the accuracy table.

    python tests/scenarios/run_suite.py                 # every scenario
    python tests/scenarios/run_suite.py ddp_ worker_    # those whose name contains a word
    python tests/scenarios/run_suite.py --keep DIR      # keep each job's report in DIR/NAME

Exit code 0 when every scenario not marked as a known miss is diagnosed correctly.
"""

from __future__ import annotations

import argparse
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from tests.scenarios.catalog import CATALOG
from tests.scenarios.harness import run_scenario, table


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("names", nargs="*", help="run only scenarios whose name contains one")
    parser.add_argument("--keep", type=Path, help="keep every job's files under this folder")
    args = parser.parse_args()
    chosen = [s for s in CATALOG if not args.names or any(n in s.name for n in args.names)]
    outcomes = []
    with tempfile.TemporaryDirectory(prefix="hd-scenarios-") as scratch:
        root = args.keep or Path(scratch)
        for number, scenario in enumerate(chosen, start=1):
            outcome = run_scenario(scenario, root / scenario.name)
            outcomes.append(outcome)
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

"""Measure the live sample's wall times on a loaded machine, for the limits CI gives each job
(at least three times this): every sample job run once, one at a time, while one spinning
process keeps a core busy (as another job would), its wall time written to
`sample_seconds.json`.

    python tests/scenarios/measure_sample.py            # the whole sample (~15 min on 2 cores)
    python tests/scenarios/measure_sample.py JOB_ID...  # a few (`name` or `name@mode`)

A job that is not diagnosed right is reported and not measured (exit code 1).
"""

from __future__ import annotations

import argparse
import json
import shutil
import sys
import tempfile
import time
from dataclasses import replace
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from tests.scenarios import modes
from tests.scenarios.harness import cores_kept_busy, run_scenario
from tests.scenarios.sample import LIVE_SAMPLE, MEASURED

#: Where the files of a job that was not diagnosed right are kept, to be read.
MISSES = Path(__file__).resolve().parents[2] / ".pytest_cache" / "hangdoctor-sample-misses"
#: Wall time allowed to a job while it is measured.
MEASURE_LIMIT_S = 300.0


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("ids", nargs="*", help="sample jobs to measure (default: all)")
    args = parser.parse_args()
    known = {job.id: job for job in LIVE_SAMPLE}
    unknown = [i for i in args.ids if i not in known]
    if unknown:
        parser.error(f"not in the live sample: {', '.join(unknown)}")
    chosen = [known[i] for i in args.ids] if args.ids else list(LIVE_SAMPLE)
    document = json.loads(MEASURED.read_text()) if MEASURED.is_file() else {"seconds": {}}
    failed = 0
    with tempfile.TemporaryDirectory(prefix="hd-sample-") as scratch, cores_kept_busy(True, 1):
        for number, job in enumerate(chosen, start=1):
            if (why := modes.unavailable(job.mode)) is not None:
                print(f"[{number}/{len(chosen)}] {job.id}: skipped ({why})", file=sys.stderr)
                continue
            scenario = replace(job.scenario, limit_s=MEASURE_LIMIT_S)
            outcome = run_scenario(scenario, Path(scratch) / job.id, job.mode)
            if outcome.correct:
                document["seconds"][job.id] = round(outcome.seconds, 1)
                status = f"{outcome.seconds:.1f} s"
            else:
                failed += 1
                kept = MISSES / job.id
                shutil.rmtree(kept, ignore_errors=True)
                shutil.copytree(Path(scratch) / job.id, kept, dirs_exist_ok=True)
                status = f"MISS, not measured (its files: {kept}): {outcome.explain()}"
            print(f"[{number}/{len(chosen)}] {job.id}: {status}", file=sys.stderr, flush=True)
    document["measured"] = time.strftime("%Y-%m-%d", time.gmtime())
    document["load"] = "one spinning process beside each job, on a 2-core machine"
    document["seconds"] = dict(sorted(document["seconds"].items()))
    MEASURED.write_text(json.dumps(document, indent=1) + "\n")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())

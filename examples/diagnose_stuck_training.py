"""The Quick start demo: run a training job that freezes under `hangdoctor run`, which notices
that it stopped making progress, captures every process, says why, and ends the job.

It runs exactly:
    hangdoctor run --hang-timeout 5 --on-hang kill -- python examples/stuck_training/train.py
and exits 0 when hangdoctor diagnosed the hang (hangdoctor itself exits 124, as `timeout` does,
when it ends a hung job).
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
REPORT_DIR = Path("hangdoctor-reports") / "quickstart"


def main() -> int:
    command = [sys.executable, "-m", "hangdoctor", "run", "--hang-timeout", "5",
               "--on-hang", "kill", "--report-dir", str(REPORT_DIR), "--",
               sys.executable, str(HERE / "stuck_training" / "train.py")]
    print("$ hangdoctor run --hang-timeout 5 --on-hang kill -- python "
          "examples/stuck_training/train.py", flush=True)
    done = subprocess.run(command, timeout=300, check=False)
    report_file = REPORT_DIR / "report.json"
    if not report_file.exists():
        print(f"hangdoctor wrote no report (exit {done.returncode})", file=sys.stderr)
        return done.returncode or 1
    report = json.loads(report_file.read_text())
    if report["verdict"] == "hung" and report["findings"]:
        print(f"\nDiagnosed: {report['findings'][0]['category']}. Full report: "
              f"{REPORT_DIR}/report.md (the job's output is in {REPORT_DIR}/output.log)")
        return 0
    print(f"unexpected verdict {report['verdict']!r} (exit {done.returncode})", file=sys.stderr)
    return 1


if __name__ == "__main__":
    sys.exit(main())

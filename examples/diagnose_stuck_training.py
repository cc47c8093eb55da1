"""The Quick start demo: run a training job that freezes, notice that it stopped making
progress, and let `hangdoctor dump` say why. Exits 0 when hangdoctor produced its report.

(`hangdoctor run -- CMD` will do the watching itself; this script shows `dump` on its own.)
"""

from __future__ import annotations

import contextlib
import os
import select
import signal
import subprocess
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
QUIET_S = 4.0  # no output for this long after training started: it is stuck
START_BUDGET_S = 120.0


def watch_until_stuck(job: subprocess.Popen) -> bool:
    """Echo the job's output; True once it has been silent for QUIET_S after its first step."""
    assert job.stdout is not None
    started = time.monotonic()
    last_output = None
    pending = b""
    while job.poll() is None:
        readable, _, _ = select.select([job.stdout], [], [], 0.2)
        now = time.monotonic()
        if readable:
            chunk = os.read(job.stdout.fileno(), 65536)
            pending += chunk
            *lines, pending = pending.split(b"\n")
            for line in lines:
                print(f"  train.py | {line.decode(errors='replace')}", flush=True)
            last_output = now
            continue
        silent_since = last_output if last_output is not None else started
        budget = QUIET_S if last_output is not None else START_BUDGET_S
        if now - silent_since > budget:
            return True
    return False


def main() -> int:
    job = subprocess.Popen(
        [sys.executable, "-u", str(HERE / "stuck_training" / "train.py")],
        stdout=subprocess.PIPE, stdin=subprocess.DEVNULL, start_new_session=True,
    )
    report_dir = Path("hangdoctor-reports") / "quickstart"
    try:
        print(f"Started the training job (pid {job.pid}); watching its output...", flush=True)
        if not watch_until_stuck(job):
            print(f"The job ended by itself (exit {job.returncode}); nothing to diagnose.")
            return 1
        print(f"\nNo output for {QUIET_S:.0f} s: running `hangdoctor dump {job.pid}`\n",
              flush=True)
        done = subprocess.run(
            [sys.executable, "-m", "hangdoctor", "dump", str(job.pid),
             "--report-dir", str(report_dir)],
            timeout=120, check=False,
        )
    finally:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(job.pid, signal.SIGKILL)
        job.wait()
    if done.returncode in (0, 1) and (report_dir / "report.json").exists():
        print(f"\nThe job was stopped. Full report: {report_dir}/report.md and report.json")
        return 0
    return done.returncode


if __name__ == "__main__":
    sys.exit(main())

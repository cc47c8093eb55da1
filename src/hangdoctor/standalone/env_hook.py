"""`HANGDOCTOR_WATCH=1 python train.py`: watch a job with no change to its code.

The wheel installs `hangdoctor-watch.pth` into site-packages; Python runs its one line at every
start, which imports this module only when HANGDOCTOR_WATCH is set (to anything but 0). Then
`watch()` starts as the script would have called it, its options from HANGDOCTOR_HANG_TIMEOUT,
HANGDOCTOR_REPORT_DIR, HANGDOCTOR_ON_HANG and HANGDOCTOR_HOOK, except in processes that are
not the job (`plan.is_a_job`): a launcher (each of its ranks watches), a multiprocessing
worker (its parent watches it), hangdoctor itself, pip.
"""

from __future__ import annotations

import os
import sys


def main() -> None:
    try:
        if os.environ.get("HANGDOCTOR_WATCH", "") in ("", "0"):
            return
        from hangdoctor.standalone.plan import is_a_job

        if not is_a_job(getattr(sys, "orig_argv", sys.argv)):
            return
        from hangdoctor.sdk import watch

        watch()
    except Exception:
        pass  # never stop an interpreter from starting


main()

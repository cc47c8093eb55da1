"""Loaded at start-up by every Python process of a scenario run without ptrace (the harness puts
this folder on PYTHONPATH; under `hangdoctor run` its bootstrap chain-loads it): makes the
process non-dumpable, as a container without CAP_SYS_PTRACE makes it untraceable.

Dropping the capability alone is not enough: the job's processes share the tracer's (reduced)
capabilities and stay traceable. A non-dumpable process refuses py-spy and hides its
/proc/PID/syscall and wchan from a tracer without the capability (docs/FACTS: "A container
without SYS_PTRACE, simulated faithfully"). The flag survives fork (DataLoader workers) and is
reset by exec, which is why every interpreter sets it again here.

Under `watch-noptrace` it also runs hangdoctor's `hangdoctor-watch.pth` hook when the installed
package has not (an editable install made before the hook existed): the job then starts exactly
as `HANGDOCTOR_WATCH=1 python train.py` does with the wheel installed.
"""

import os
import sys

_PR_SET_DUMPABLE = 4

if os.environ.get("HD_TEST_UNDUMPABLE") == "1":
    try:
        import ctypes

        if ctypes.CDLL(None, use_errno=True).prctl(_PR_SET_DUMPABLE, 0, 0, 0, 0) != 0:
            sys.stderr.write("scenario harness: prctl(PR_SET_DUMPABLE, 0) failed\n")
    except Exception as error:  # the harness sees py-spy attach and flags the run
        sys.stderr.write(f"scenario harness: cannot make this process non-dumpable: {error}\n")

if os.environ.get("HANGDOCTOR_WATCH", "0") not in ("", "0") and (
    "hangdoctor.standalone.env_hook" not in sys.modules
):
    try:
        import importlib

        importlib.import_module("hangdoctor.standalone.env_hook")  # what the .pth line does
    except Exception as error:
        sys.stderr.write(f"scenario harness: cannot start hangdoctor's watch hook: {error}\n")

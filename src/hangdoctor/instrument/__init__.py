"""In-process instrumentation for `hangdoctor run`: the environment that makes every Python
process of a job report its training progress.

The job's interpreter may be another Python, in another venv, where `hangdoctor` is not
importable. So the code that runs inside the job lives in `bootstrap/`, a folder of stdlib-only
modules put first on the job's PYTHONPATH: its `sitecustomize` arms the probe once `torch` is
imported, and the probe writes `status-<pid>.json` files that `probes.progress` reads back.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from pathlib import Path

from hangdoctor.instrument.bootstrap import _hangdoctor_protocol as protocol

STATUS_DIR_ENV = protocol.STATUS_DIR_ENV


def bootstrap_dir() -> Path:
    """The folder to put first on the job's PYTHONPATH."""
    return Path(__file__).resolve().parent / "bootstrap"


def instrumented_environment(env: Mapping[str, str], status_dir: Path) -> dict[str, str]:
    """A copy of `env` that instruments the job: our bootstrap first on PYTHONPATH (the user's
    entries kept after it, in order) and the status folder, absolute because the job may chdir."""
    ours = str(bootstrap_dir())
    theirs = [entry for entry in env.get("PYTHONPATH", "").split(os.pathsep) if entry != ours]
    result = dict(env)
    result["PYTHONPATH"] = os.pathsep.join([ours, *theirs]) if any(theirs) else ours
    result[STATUS_DIR_ENV] = os.path.abspath(status_dir)
    result[protocol.SUPERVISED_ENV] = "1"  # `hangdoctor.watch()` in the job: feed us, no watchdog
    # PyTorch's Flight Recorder: a small ring buffer of recent collectives per rank, read at a
    # hang to say which rank is missing from which collective. Kept if the user set a size.
    if not result.get("TORCH_FR_BUFFER_SIZE") and not result.get("TORCH_NCCL_TRACE_BUFFER_SIZE"):
        result["TORCH_FR_BUFFER_SIZE"] = "2000"
    return result

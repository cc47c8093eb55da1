"""How the suite launches each scenario: the mode, chosen by HANGDOCTOR_SUITE_MODE (or
`run_suite.py --mode`).

- `run` (the default, CI's): the job under `hangdoctor run --on-hang kill`, with every privilege
  the harness has.
- `run-noptrace`: the same command, as in a container without CAP_SYS_PTRACE: hangdoctor under
  `setpriv --bounding-set -sys_ptrace`, every Python process of the job non-dumpable
  (`undumpable/sitecustomize.py`). py-spy cannot attach; the diagnosis rests on the job's own
  instrumentation (status files, faulthandler stacks, Flight Recorder) and /proc.
- `watch-noptrace`: no wrapper at all, as a managed launcher starts `python train.py` itself:
  the scenario's own command under the same setpriv, with `HANGDOCTOR_WATCH=1` and the hang
  threshold, report folder and `on hang: kill` (exit 124) in its environment; hangdoctor's
  watchdog inside the job writes `hang-N/report.json` (under `node-N/` on several nodes), and
  its sidecar, once a job that failed is gone, `failure-N/report.json`.

Each mode keeps its outcomes apart (`outcomes_dir`, `last_run_file`).
"""

from __future__ import annotations

import functools
import os
import shutil
import subprocess
from collections.abc import Mapping
from pathlib import Path

MODE_ENV = "HANGDOCTOR_SUITE_MODE"
RUN = "run"
RUN_NOPTRACE = "run-noptrace"
WATCH_NOPTRACE = "watch-noptrace"
MODES = (RUN, RUN_NOPTRACE, WATCH_NOPTRACE)
#: Makes every Python process of the job non-dumpable (read by undumpable/sitecustomize.py).
UNDUMPABLE_ENV = "HD_TEST_UNDUMPABLE"
UNDUMPABLE_SITE = Path(__file__).resolve().parent / "undumpable"
#: The exit code of a job that watch() ended at a hang (as `run --on-hang kill`).
HUNG_EXIT = 124
_DROP_PTRACE = ("--bounding-set", "-sys_ptrace", "--")


class ModeError(ValueError):
    """A mode that does not exist."""


def current_mode(environ: Mapping[str, str] | None = None) -> str:
    """The mode HANGDOCTOR_SUITE_MODE names; `run` when it is unset or empty."""
    value = (os.environ if environ is None else environ).get(MODE_ENV, "").strip() or RUN
    if value not in MODES:
        raise ModeError(f"{MODE_ENV}={value!r} is not one of {', '.join(MODES)}")
    return value


def without_ptrace(mode: str) -> bool:
    return mode != RUN


@functools.cache
def unavailable(mode: str) -> str | None:
    """Why `mode` cannot run on this machine (None: it can): the no-ptrace modes need setpriv
    and the right to drop a capability from the bounding set (root, or CAP_SETPCAP)."""
    if not without_ptrace(mode):
        return None
    setpriv = shutil.which("setpriv")
    if setpriv is None:
        return f"{mode} needs setpriv (util-linux), which is not installed"
    try:
        done = subprocess.run(
            [setpriv, *_DROP_PTRACE, "true"], capture_output=True, text=True, timeout=30
        )
    except (OSError, subprocess.TimeoutExpired) as error:
        return f"{mode}: setpriv cannot run ({error})"
    if done.returncode != 0:
        why = done.stderr.strip().splitlines()[-1:] or [f"exit {done.returncode}"]
        return f"{mode} needs root or CAP_SETPCAP to drop CAP_SYS_PTRACE: setpriv says {why[0]}"
    return None


def wrap(mode: str, command: list[str]) -> list[str]:
    """`command` as it runs in `mode`: under setpriv without CAP_SYS_PTRACE, or as it is."""
    if not without_ptrace(mode):
        return command
    setpriv = shutil.which("setpriv") or "setpriv"
    return [setpriv, *_DROP_PTRACE, *command]


def mode_env(
    mode: str, environ: Mapping[str, str], report_dir: Path, hang_timeout_s: float
) -> dict[str, str]:
    """The variables `mode` adds to (or changes in) the job's environment `environ`."""
    if not without_ptrace(mode):
        return {}
    path = [str(UNDUMPABLE_SITE), *filter(None, environ.get("PYTHONPATH", "").split(os.pathsep))]
    added = {UNDUMPABLE_ENV: "1", "PYTHONPATH": os.pathsep.join(path)}
    if mode == WATCH_NOPTRACE:
        added |= {
            "HANGDOCTOR_WATCH": "1",
            "HANGDOCTOR_HANG_TIMEOUT": str(hang_timeout_s),
            "HANGDOCTOR_REPORT_DIR": str(report_dir),
            "HANGDOCTOR_ON_HANG": "kill",
        }
    return added


def find_reports(mode: str, report_dir: Path) -> list[Path]:
    """The report(s) a run wrote, the one to judge first: `report.json` under `run`; under
    watch, one `hang-N/report.json` per hang (per node: `node-N/hang-N/`), first hang first,
    then the `failure-N/report.json` of a job that failed."""
    if mode != WATCH_NOPTRACE:
        found = report_dir / "report.json"
        return [found] if found.is_file() else []

    def order(path: Path) -> tuple[int, int, str]:
        kind, _, number = path.parent.name.partition("-")
        return (kind == "failure", int(number) if number.isdigit() else 0, str(path))

    reports = [
        *report_dir.glob("**/hang-*/report.json"),
        *report_dir.glob("**/failure-*/report.json"),
    ]
    return sorted(reports, key=order)


#: The module of the process that writes watch's failure report once the job is gone.
SIDECAR_MODULE = "hangdoctor.standalone.sidecar"
#: How long it may take (its own alarm is 170 s).
SIDECAR_WAIT_S = 180.0


def outcomes_dir(base: Path, mode: str) -> Path:
    """Where the outcomes of a session in `mode` are kept (`base` itself for `run`)."""
    return base if mode == RUN else base.with_name(f"{base.name}.{mode}")


def last_run_file(base: Path, mode: str) -> Path:
    """The recorded run of `mode`: `last_run.json` for `run`, `last_run.<mode>.json` else."""
    return base if mode == RUN else base.with_name(f"{base.stem}.{mode}{base.suffix}")

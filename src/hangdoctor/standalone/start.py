"""What `hangdoctor.watch()` does: under `hangdoctor run`, only arm the probe (its supervisor
watches); otherwise plan who watches (`plan`), make the report folder, arm the probe into it,
record how the process will end (`exit_record`), and where the plan says so start the
sidecar that reports a failure (`sidecar`) and the watchdog."""

from __future__ import annotations

import os
import sys

from hangdoctor.i18n import _
from hangdoctor.instrument.bootstrap import _hangdoctor_protocol as protocol
from hangdoctor.private_files import make_dir
from hangdoctor.standalone import arming, exit_record, sidecar
from hangdoctor.standalone.options import HangHook, resolve, warn
from hangdoctor.standalone.plan import make_plan, started_at, started_by_multiprocessing
from hangdoctor.standalone.watchdog import Watchdog
from hangdoctor.standalone.watching import Watching


def _multiprocessing_child() -> bool:
    """Whether multiprocessing started this process (a forked one has a parent process; a
    spawned one says so on its command line, and runs the script's top level again)."""
    if started_by_multiprocessing(getattr(sys, "orig_argv", sys.argv)):
        return True
    multiprocessing = sys.modules.get("multiprocessing")
    return multiprocessing is not None and multiprocessing.parent_process() is not None


def start(
    hang_timeout_s: object,
    report_dir: object,
    on_hang: object,
    hook: HangHook | None,
    compile_budget_s: object,
) -> Watching:
    """Set up the watch of this process (see `hangdoctor.watch`)."""
    if os.environ.get(protocol.SUPERVISED_ENV) and os.environ.get(protocol.STATUS_DIR_ENV):
        arming.arm(None, supervised=True)
        return Watching(None, None, supervised=True)
    if _multiprocessing_child():
        # A worker that multiprocessing started (a spawned DataLoader worker runs the script's
        # top level again): its parent's watchdog watches it; it only reports, as under `run`.
        if os.environ.get(protocol.STATUS_DIR_ENV):
            arming.arm(None, supervised=False)
        return Watching(None, None, supervised=False)
    options = resolve(hang_timeout_s, compile_budget_s, report_dir, on_hang, hook)
    plan = make_plan(options.report_dir)
    make_dir(plan.report_dir)
    make_dir(plan.status_dir)
    arming.arm(plan.status_dir, supervised=False)
    exit_record.install()
    watchdog = None
    if plan.watchdog:
        watchdog = Watchdog(options, plan)
        since = started_at(plan.root_pid) or watchdog.started_wall
        watchdog.sidecar = sidecar.launch(plan.root_pid, plan.report_dir, plan.status_dir, since)
        watchdog.start()
        warn(
            _(
                "watching this job (pid {pid}); a hang's or a failure's report goes to {path}",
                pid=plan.root_pid,
                path=plan.report_dir,
            )
        )
    return Watching(plan, watchdog, supervised=False)

"""The watchdog thread of `hangdoctor.watch()`: `run`'s hang policy (`supervise.policy`), fed
once a second from inside the job, and at a hang a separate process for the heavy work.

The thread only reads (`readings`) and decides. At a hang it starts `python -m
hangdoctor.standalone.capture`, which leaves the job's process tree at once (so that it is not
captured as part of the job), captures the tree as `run` does (the ranks' stacks, py-spy or,
where ptrace is refused, faulthandler through the probe's signal; the Flight Recorder; /proc),
runs the pipeline and writes `hang-N/` in the report directory; it has a time limit and exits
when done. The thread waits for its answer, then calls the user's hook and, when asked, ends
the process with exit code 124 so that a restart policy can start the job again.
"""

from __future__ import annotations

import contextlib
import json
import os
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

from hangdoctor.i18n import _
from hangdoctor.instrument.bootstrap import _hangdoctor_protocol as protocol
from hangdoctor.options import WATCH_ENV
from hangdoctor.standalone import exit_record, readings, sidecar
from hangdoctor.standalone.options import (
    HangInfo,
    WatchOptions,
    described,
    load_hook,
    warn,
)
from hangdoctor.standalone.plan import WatchPlan
from hangdoctor.supervise.policy import HangDecision, HangPolicy, ProgressTracker, phase_in_force

TICK_S = 1.0
#: How long the capture process may take: `run`'s bound on a whole hang capture, plus time to
#: start Python and write the report.
CAPTURE_LIMIT_S = 150.0
HUNG_EXIT = 124  # as `hangdoctor run --on-hang kill` and timeout(1)


def next_hang_number(report_dir: Path) -> int:
    """The first N with no `hang-N` yet: a job restarted after a hang (exit 124) keeps its
    earlier reports."""
    number = 1
    while (report_dir / f"hang-{number}").exists() or (
        report_dir / f".hang-{number}.json"
    ).exists():
        number += 1
    return number


class Watchdog:
    """Watches the tree of `plan.root_pid` from a daemon thread of this process."""

    def __init__(self, options: WatchOptions, plan: WatchPlan) -> None:
        self.options = options
        self.plan = plan
        self.started = time.monotonic()
        self.started_wall = time.time()
        self.tracker = ProgressTracker(
            HangPolicy(
                hang_timeout_s=options.hang_timeout_s, compile_budget_s=options.compile_budget_s
            )
        )
        self.current: HangDecision | None = None
        self.reports: list[Path] = []
        self._stop = threading.Event()
        self._last: tuple[float, float, float] | None = None  # (at, cpu s, io bytes)
        #: The starter of the sidecar that reports a failure (it forks the sidecar away and
        #: exits): reaped by the thread, so that the job's start does not wait for it.
        self.sidecar: subprocess.Popen[bytes] | None = None
        self.thread = threading.Thread(target=self._run, name="hangdoctor-watchdog", daemon=True)

    def start(self) -> None:
        self.thread.start()

    def stop(self) -> None:
        self._stop.set()

    def _run(self) -> None:
        sidecar.reap(self.sidecar)
        try:
            while not self._stop.wait(TICK_S):
                self.tick(time.monotonic() - self.started)
        except Exception as error:  # never into the job: say it once and stop watching
            warn(
                _(
                    "warning: the watchdog stopped ({error}); the job goes on unwatched",
                    error=described(error),
                )
            )

    def tick(self, now: float) -> HangDecision | None:
        """One look at the job; the hang declared now, if any."""
        reading = readings.read(self.plan.root_pid, self.plan.status_dir)
        tracker = self.tracker
        tracker.elapse(now, reading.share)
        progressed = tracker.observe(now, reading.counters)
        tracker.in_phase(*phase_in_force(reading.phases, time.time(), now))
        last, self._last = self._last, (now, reading.cpu_s, reading.io_bytes)
        if self.current is not None:
            if progressed:
                warn(
                    _(
                        "progress resumed {seconds:.0f} s after the hang was declared; watching "
                        "again",
                        seconds=now - self.current.declared_s,
                    )
                )
                self.current = None
            return None
        busy = reading.runnable
        if last is not None and now > last[0]:
            span = now - last[0]
            if readings.computing(max(0.0, reading.cpu_s - last[1]) / span, reading.share):
                busy = True
            if max(0.0, reading.io_bytes - last[2]) / span >= readings.IO_WORK_BYTES_PER_S:
                tracker.moved(now)
        if busy:
            tracker.computed(now)
        if reading.compiling:
            tracker.compiled(now)
        decision = tracker.check(now, busy=busy)
        if decision is None:
            return None
        self.current = decision
        self._hang(decision, reading.ranks)
        return decision

    # at a hang -------------------------------------------------------------------------------
    def _hang(self, decision: HangDecision, ranks: int) -> None:
        quiet = decision.declared_s - decision.last_progress_s
        how = (
            decision.kind
            if decision.job_phase is None
            else f"{decision.kind}, {decision.job_phase}"
        )
        warn(
            _(
                "no progress for {seconds:.0f} s ({how}): hang declared, capturing every process",
                seconds=quiet,
                how=how,
            )
        )
        number = next_hang_number(self.plan.report_dir)
        answer = self.plan.report_dir / f".hang-{number}.json"
        request = {
            "pid": self.plan.root_pid,
            "status_dir": str(self.plan.status_dir),
            "hang_dir": str(self.plan.report_dir / f"hang-{number}"),
            "answer": str(answer),
            "ranks": ranks,
            "started_wall": self.started_wall,
            "hang_timeout_s": self.tracker.threshold_s,
            "decision": {
                "kind": decision.kind,
                "last_progress_s": decision.last_progress_s,
                "declared_s": decision.declared_s,
                "threshold_s": decision.threshold_s,
                "phase": decision.phase,
                "job_phase": decision.job_phase,
            },
        }
        result = self._capture(request, answer)
        info = HangInfo(
            report_dir=self.plan.report_dir / f"hang-{number}",
            category=_text(result.get("category")),
            title=_text(result.get("title")),
            culprit=_text(result.get("culprit")),
            phase=decision.job_phase,
            ending_job=self.options.on_hang == "kill",
        )
        if result.get("written"):
            self.reports.append(info.report_dir)
        hook = self.options.hook
        if isinstance(hook, str):
            hook = load_hook(hook)
        if hook is not None:
            try:
                hook(info)
            except Exception as error:
                warn(
                    _(
                        "warning: the hang hook failed: {error}",
                        error=described(error),
                    )
                )
        if self.options.on_hang == "kill":
            self._end_job()

    def _capture(self, request: dict[str, object], answer: Path) -> dict[str, object]:
        """Run the capture process and wait for its answer (what it concluded)."""
        env = {
            key: value
            for key, value in os.environ.items()
            if key not in (WATCH_ENV, protocol.STATUS_DIR_ENV, protocol.SUPERVISED_ENV)
        }
        try:
            starter = subprocess.Popen(
                [sys.executable, "-m", "hangdoctor.standalone.capture", json.dumps(request)],
                stdin=subprocess.DEVNULL,
                stdout=subprocess.DEVNULL,
                env=env,
                start_new_session=True,
                close_fds=True,
            )
            starter.wait(timeout=30)  # it forks the capture away and returns at once
        except (OSError, subprocess.SubprocessError) as error:
            warn(_("capture failed: cannot start it ({error})", error=str(error)))
            return {}
        deadline = time.monotonic() + CAPTURE_LIMIT_S
        while time.monotonic() < deadline:
            with contextlib.suppress(OSError, ValueError):
                data = json.loads(answer.read_text(encoding="utf-8"))
                if isinstance(data, dict):
                    return data
            time.sleep(0.2)
        warn(_("capture failed: no answer within {seconds:g} s", seconds=CAPTURE_LIMIT_S))
        return {}

    def _end_job(self) -> None:
        """End this process with 124 (its children first), as `run --on-hang kill` does."""
        warn(_("ending the job (exit {code})", code=HUNG_EXIT))
        exit_record.note_hang_exit()  # the hang's report says it: no failure report
        me = os.getpid()
        for pid in readings.tree(me)[1:]:
            with contextlib.suppress(OSError):
                os.kill(pid, signal.SIGTERM)
        for stream in (sys.stdout, sys.stderr):
            with contextlib.suppress(Exception):
                stream.flush()
        os._exit(HUNG_EXIT)


def _text(value: object) -> str | None:
    return value if isinstance(value, str) else None

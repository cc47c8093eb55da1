"""What `run` captures of its job while it runs: every process at a hang, written to `hang-N/`
(with the other nodes' captures when the job runs on several: `whole_job`), and the live tree
when the user interrupts the job before any hang was declared."""

from __future__ import annotations

import contextlib
from pathlib import Path
from typing import TYPE_CHECKING

from hangdoctor import bounded
from hangdoctor.i18n import N_, _
from hangdoctor.supervise.job_record import JobRecorder
from hangdoctor.supervise.policy import HangDecision
from hangdoctor.supervise.say import say

if TYPE_CHECKING:
    from hangdoctor.evidence.model import Bundle, JobRecord, ProbeError, SystemInfo
    from hangdoctor.nodes.session import NodeSession
    from hangdoctor.report.model import Report
    from hangdoctor.supervise.hang_capture import HangCapture

_CAPTURE_LIMIT_S = 120.0  # a whole hang capture, all probes together, plus per process:
_CAPTURE_LIMIT_PER_PROCESS_S = 0.5
_HANG_KINDS = {"idle": N_("idle"), "busy": N_("busy")}


class JobCapture:
    """Captures the job `pid` and keeps what it found: the hangs (`hangs`), the host's facts
    (`system`) and the live tree at an interrupt (`interrupted`)."""

    def __init__(
        self,
        pid: int,
        report_dir: Path,
        recorder: JobRecorder,
        session: NodeSession | None,
        native_stacks: bool,
        ending_job: bool,
    ) -> None:
        self.pid = pid
        self.report_dir = report_dir
        self.recorder = recorder
        self.hangs = recorder.hangs
        self.session = session  # a job of several nodes: one capture of the whole job per hang
        self.native_stacks = native_stacks
        self.ending_job = ending_job  # `--on-hang kill`: the job ends once its hang is captured
        self.system: SystemInfo | None = None  # the host's facts, from the last capture
        self.interrupted: Bundle | None = None  # the live tree when the user interrupted

    def hang(
        self, decision: HangDecision, now: float, again: bool, epoch: int | None = None
    ) -> None:
        """Capture the hung job, diagnose it and write `hang-N/`; `again`: the hang in force,
        looked at again (written only when the picture changed); `epoch`: a hang another node
        declared (`nodes`)."""
        session = self.session
        if session is not None and again:
            return  # one job-wide capture per hang: the others do not capture again with us
        peer = epoch is not None  # another node declared this hang
        if session is not None and epoch is None:
            epoch = session.declare()
        if not again:  # a hang that holds is said apart, backing off (WatchLoop)
            _announce(decision, peer)
        captured, failure = self._bounded("hang capture", decision, self.recorder.record())
        if captured is None:
            self._failed(now, again, failure)
            return
        bundle, report = captured
        self.system = bundle.system
        number = len(self.hangs.reports) + 1
        directory = self.report_dir / f"hang-{number}"
        if session is not None and epoch is not None:
            from hangdoctor.supervise.whole_job import whole_job

            bundle, report = whole_job(session, epoch, bundle, report, directory, self.ending_job)
        self._keep(decision, now, again, number, bundle, report)

    def _keep(
        self,
        decision: HangDecision,
        now: float,
        again: bool,
        number: int,
        bundle: Bundle,
        report: Report,
    ) -> None:
        """Write the hang's report and say what it found, unless it is the hang in force with
        the same picture as before."""
        from hangdoctor.report.directory import write_report_dir
        from hangdoctor.report.render_terminal import render_terminal, summary_console
        from hangdoctor.supervise.hang_capture import HangReport, signature

        current = self.hangs.current
        seen = signature(report)
        if again and current is not None and seen == current.signature:
            current.captured_at_s = now
            return
        directory = self.report_dir / f"hang-{number}"
        try:
            report = write_report_dir(directory, report, bundle)
        except OSError as error:  # a full disk: say so, keep watching, the job goes on
            say(
                _(
                    "warning: cannot write {path} ({error})",
                    path=directory,
                    error=error.strerror or error,
                )
            )
        self.hangs.declared(HangReport(decision, number, seen, bundle, report, now), again)
        if again:
            say(_("still hung, and the picture changed:"))
        if report.root_cause is None:
            say(_("no rule explains it yet; the stacks of every process are in the report"))
        with contextlib.suppress(Exception):  # the summary is a courtesy: never fail on it
            render_terminal(report, summary_console(stderr=True), str(directory), max_findings=1)

    def _failed(self, now: float, again: bool, failure: ProbeError | None) -> None:
        """Say that a capture failed; one of the hang in force is tried again at the usual
        interval, not at every tick, and said once."""
        current = self.hangs.current
        if again and current is not None:
            current.captured_at_s = now
            if current.failed_again:
                return
            current.failed_again = True
        reason = failure.message if failure is not None else _("no result")
        say(_("capture failed: {reason}", reason=reason))

    def interrupt(self, now: float) -> None:
        """The user stopped the job before any hang was declared: capture the live tree, where
        every process was (`interrupted`), for the final report."""
        say(_("interrupted: capturing every process before passing the interrupt on"))
        tracker = self.recorder.tracker
        decision = HangDecision("idle", tracker.last_progress_s, now, tracker.threshold_s)
        record = self.recorder.record(interrupted=True)
        captured, _failure = self._bounded("interrupt capture", decision, record)
        if captured is not None:
            self.interrupted = captured[0]

    def _bounded(
        self, what: str, decision: HangDecision, record: JobRecord
    ) -> tuple[tuple[Bundle, Report] | None, ProbeError | None]:
        """Capture and diagnose the tree within one time limit: what it found, else why
        nothing."""
        from hangdoctor.supervise.hang_capture import capture_hang

        job = self._job()
        # Every probe has its own time limit; this one bounds them all, so that whatever
        # stalls (a /proc read of a process stuck in the kernel) the loop goes on, and a job
        # to be ended is ended.
        timeline = self.recorder.sampler.timeline
        processes = len(timeline[-1].processes) if timeline else 1
        return bounded.call(
            what,
            lambda: capture_hang(job, decision, record),
            _CAPTURE_LIMIT_S + _CAPTURE_LIMIT_PER_PROCESS_S * processes,
        )

    def _job(self) -> HangCapture:
        from hangdoctor.supervise.hang_capture import HangCapture

        sampler = self.recorder.sampler
        return HangCapture(
            pid=self.pid,
            status_dir=self.recorder.status_dir,
            ranks=sum(1 for s in sampler.statuses if s.rank is not None),
            started_wall=self.recorder.started_wall,
            native_stacks=self.native_stacks,
            gaps=sampler.gaps(),
            gpus=sampler.gpus,
        )


def _announce(decision: HangDecision, peer: bool) -> None:
    """Say that a hang was declared, and why, before the capture."""
    how = _(_HANG_KINDS.get(decision.kind, decision.kind))
    if decision.phase is not None:
        how = f"{how}, {decision.phase}"
    if peer:
        say(_("captured with the other nodes ({how} here)", how=how))
    elif decision.proven is not None:
        say(
            _(
                "no progress for {seconds:.0f} s, and the stacks prove that none can come: "
                "{why}; hang declared before the threshold, capturing every process",
                seconds=decision.declared_s - decision.last_progress_s,
                why=decision.proven,
            )
        )
    else:
        say(
            _(
                "no progress for {seconds:.0f} s ({how}): hang declared, capturing every process",
                seconds=decision.declared_s - decision.last_progress_s,
                how=how,
            )
        )

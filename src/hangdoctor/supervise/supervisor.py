"""The supervisor: owns the job, keeps its output flowing, watches progress and declares hangs.
What happens at a hang lives in `hang_capture`, the report at the end in `final_report`."""

from __future__ import annotations

import contextlib
import os
import signal
import sys
import tempfile
import threading
import time
import traceback
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from types import FrameType
from typing import TYPE_CHECKING, BinaryIO

from hangdoctor import bounded
from hangdoctor.errors import ExitCode, LaunchError
from hangdoctor.i18n import N_, _, _n
from hangdoctor.instrument import instrumented_environment
from hangdoctor.private_files import make_dir, open_log
from hangdoctor.probes.progress import (
    STOPPED_GLOB,
    read_fault_logs,
    read_offloop_calls,
    read_process_ends,
    read_thread_deaths,
    read_uncaught,
    with_sync_source,
)
from hangdoctor.redact import redact_argv, redact_value
from hangdoctor.supervise.failure_watch import FailureWatch
from hangdoctor.supervise.launch import (
    Launched,
    become_subreaper,
    launch,
    take_terminal_back,
)
from hangdoctor.supervise.novel_output import NovelOutput
from hangdoctor.supervise.output import Channel, LogView, open_channels, resize
from hangdoctor.supervise.policy import (
    Counters,
    HangDecision,
    HangPolicy,
    ProgressTracker,
    StillHungNotices,
    phase_in_force,
)
from hangdoctor.supervise.proof_watch import ProofWatch
from hangdoctor.supervise.relay_process import RelayProcess, start_relay_process
from hangdoctor.supervise.terminate import reap_orphans, terminate_tree

if TYPE_CHECKING:
    from hangdoctor.evidence.model import Bundle, FaultLog, JobRecord, SystemInfo
    from hangdoctor.nodes.session import NodeSession, SessionPlan
    from hangdoctor.report.model import Report
    from hangdoctor.supervise.hang_capture import HangReport
    from hangdoctor.supervise.metrics import MetricsServer

# The job is started before anything heavy is imported: the capture, the rules, the reports
# and pydantic are loaded while the job itself starts up, not ahead of it.

_TICK_S = 0.2
_SAMPLE_EVERY_S = 1.0
_FORWARDED = (signal.SIGINT, signal.SIGTERM, signal.SIGHUP)
_BUSY_CORES = 0.3  # a process looked at for a device wait uses more than this share of a CPU
# What signal.signal() takes and returns (typeshed's private signal._HANDLER).
_Handler = Callable[[int, FrameType | None], object] | int | signal.Handlers | None
_CAPTURE_LIMIT_S = 120.0  # a whole hang capture, all probes together, plus per process:
_CAPTURE_LIMIT_PER_PROCESS_S = 0.5
_PROOF_LIMIT_S = 10.0  # one look at an idle job's stacks for a proof (proof_peek)
_DRAIN_S = 5.0  # after the job exits, how long its leftover children may keep the output open
_HANG_KINDS = {"idle": N_("idle"), "busy": N_("busy")}


@dataclass(frozen=True)
class RunOptions:
    """What `hangdoctor run` was asked to do."""

    command: tuple[str, ...]
    report_dir: Path
    hang_timeout_s: float | None = None
    on_hang: str = "report"  # or "kill"
    instrument: bool = True
    kill_grace_s: float = 10.0
    native_stacks: bool = False
    prove: bool = True  # declare an idle hang as soon as its stacks prove it (analysis.proof)
    compile_budget_s: float | None = None  # default: HangPolicy.compile_factor x the timeout
    coordinator: tuple[str, int] | None = None  # `--coordinator`: where the nodes meet
    join_nodes: bool = True  # a job of several nodes: meet the other nodes' hangdoctor
    metrics_port: int = 0  # serve Prometheus metrics on it (supervise.metrics); 0: off
    metrics_addr: str = "127.0.0.1"


def _say(message: str) -> None:
    """One line for the user on stderr, never mixed into the job's own output log."""
    with contextlib.suppress(OSError):
        sys.stderr.write(f"hangdoctor: {message}\n")
        sys.stderr.flush()


class Supervisor:
    """Runs one job to its end."""

    def __init__(self, options: RunOptions) -> None:
        self.options = options
        self.report_dir = options.report_dir
        self.status_dir = options.report_dir / "progress" if options.instrument else None
        self.received: list[int] = []
        self.launched: Launched | None = None
        self.hangs: list[HangReport] = []
        self.current: HangReport | None = None
        self.still_hung: StillHungNotices | None = None  # for the hang in `current`
        self.killed = False
        self.system: SystemInfo | None = None
        self.channels: list[Channel] = []
        self.relay: RelayProcess | None = None
        self.failure_watch: FailureWatch | None = None  # made with the sampler, in _watch
        #: A first Ctrl-C before any hang was declared: the tree is captured, then it is
        #: passed on (a second one is passed on at once).
        self.interrupt_held = False
        self.interrupted_capture: Bundle | None = None
        self.session: NodeSession | None = None  # a job of several nodes (nodes/)
        self.proofs = ProofWatch()  # looks at an idle job's stacks before the threshold

        # signals ---------------------------------------------------------------------------------
        # What of the output counts as progress: lines not seen before (novel_output).
        self.novel = NovelOutput(lambda offset, count: self.log.read_range(offset, count))

    def _forward(self, signum: int, _frame: object) -> None:
        first = not self.received
        self.received.append(signum)
        if (
            signum == signal.SIGINT
            and first
            and self.current is None
            and not self.killed
            and self.launched is not None
        ):
            self.interrupt_held = True
            return
        if self.launched is not None:
            with contextlib.suppress(OSError):
                os.killpg(self.launched.pgid, signum)

    def _on_resize(self, _signum: int, _frame: object) -> None:
        resize(self.channels)
        if self.launched is not None:
            with contextlib.suppress(OSError):
                os.killpg(self.launched.pgid, signal.SIGWINCH)

    def _install_signals(self) -> dict[signal.Signals, _Handler]:
        previous = {sig: signal.signal(sig, self._forward) for sig in _FORWARDED}
        previous[signal.SIGWINCH] = signal.signal(signal.SIGWINCH, self._on_resize)
        # Writing to the terminal while the job owns it must not stop us.
        previous[signal.SIGTTOU] = signal.signal(signal.SIGTTOU, signal.SIG_IGN)
        return previous

    # main loop -------------------------------------------------------------------------------
    def run(self) -> int:
        """Run the job; returns the exit code hangdoctor should exit with."""
        options = self.options
        plan = self._session_plan()
        if plan is not None and plan.report_dir is not None:
            self.report_dir = plan.report_dir
            if self.status_dir is not None:
                self.status_dir = plan.report_dir / "progress"
        log_file = self._open_report_dir()
        if log_file is None:
            return run_unsupervised(options.command)
        env = dict(os.environ)
        if self.status_dir is not None:
            env = instrumented_environment(env, self.status_dir)
        self.channels = open_channels()
        log_path = self.report_dir / "output.log"
        # Unbuffered: every chunk goes straight to the file, and nothing is lost if we die.
        self.log = LogView(log_file)
        # The relay exists before the job does, and outlives us if we die (relay_process).
        self.relay = start_relay_process(self.channels, self.log.file, str(log_path), _DRAIN_S)
        become_subreaper()
        previous = self._install_signals()
        self.started = time.monotonic()
        self.started_wall = time.time()
        try:
            self.launched = launch(options.command, env, self.channels)
            if plan is not None:
                self._join_nodes(plan)
            warm = threading.Thread(target=self._prepare_reporting, name="warm-up", daemon=True)
            warm.start()
            returncode = self._watch()
            self.relay.finish(_DRAIN_S, copied=lambda: self.log.total_bytes)
            reap_orphans(exclude={self.launched.process.pid, self.relay.pid})
            take_terminal_back(self.launched)
        finally:
            if self.session is not None:
                self.session.stop()
            for sig, handler in previous.items():
                signal.signal(sig, handler)
            if self.launched is not None and self.launched.process.poll() is None:
                self.relay.release()  # we are failing, not the job: leave it its output
            else:
                self.relay.finish(0.0)
            self.log.close()
        return self._finish(returncode)

    def _session_plan(self) -> SessionPlan | None:
        """A job of several nodes: who this node is and how it meets the others."""
        if not self.options.join_nodes:
            return None
        import socket

        from hangdoctor.nodes.plan import session_plan

        try:
            return session_plan(
                self.options.command,
                os.environ,
                socket.gethostname(),
                self.report_dir,
                self.options.coordinator,
            )
        except Exception as error:  # never cost the job its run
            _say(_("warning: cannot tell which node of the job this is ({error})", error=error))
            return None

    def _join_nodes(self, plan: SessionPlan) -> None:
        from hangdoctor.nodes.session import NodeSession

        def ranks() -> tuple[int, ...]:
            sampler = getattr(self, "sampler", None)
            statuses = sampler.statuses if sampler is not None else []
            return tuple(sorted({s.rank for s in statuses if s.rank is not None}))

        self.session = NodeSession(plan, ranks)
        self.session.start()
        _say(
            _(
                "node {node} of {nodes}: meeting the other nodes via {transport}",
                node=plan.me,
                nodes=plan.expected or "?",
                transport=plan.transport,
            )
        )

    def _open_report_dir(self) -> BinaryIO | None:
        """Make the report directory and open the log in it. A directory that cannot be made
        must not cost the job its run: the report then goes to a private temporary folder,
        and failing that the job runs without hangdoctor."""
        try:
            return self._make_report_dir(self.report_dir)
        except OSError as error:
            problem = _(
                "cannot write the report to {path} ({error})",
                path=self.report_dir,
                error=error.strerror or error,
            )
        try:
            fallback = Path(tempfile.mkdtemp(prefix="hangdoctor-"))
            log_file = self._make_report_dir(fallback)
        except OSError:
            _say(
                _(
                    "warning: {problem}, nor to a temporary folder: running the job without "
                    "hangdoctor",
                    problem=problem,
                )
            )
            return None
        _say(_("warning: {problem}; writing it to {path} instead", problem=problem, path=fallback))
        self.report_dir = fallback
        if self.status_dir is not None:
            self.status_dir = fallback / "progress"
        return log_file

    def _make_report_dir(self, directory: Path) -> BinaryIO:
        make_dir(directory)
        if self.options.instrument:
            make_dir(directory / "progress")
        return open_log(directory / "output.log")

    def _prepare_reporting(self) -> None:
        """Import the capture, rules and reports and read the host facts while the job runs,
        on the spare core, so that the final report after the job exits is quick."""
        with contextlib.suppress(Exception):
            import hangdoctor.report.render_terminal
            import hangdoctor.supervise.final_report
            import hangdoctor.supervise.hang_capture  # noqa: F401
            from hangdoctor.probes.system import read_system

            system = read_system(None)
            if self.system is None:
                self.system = system

    def _watch(self) -> int:
        from hangdoctor.supervise.sampler import TreeSampler

        assert self.launched is not None
        process = self.launched.process
        policy = HangPolicy(
            fixed_timeout_s=self.options.hang_timeout_s,
            compile_budget_s=self.options.compile_budget_s,
        )
        self.tracker = ProgressTracker(policy)
        self.sampler = TreeSampler(process.pid, self.started, self.status_dir)
        watch = self.failure_watch = FailureWatch(self.status_dir)
        metrics = self._serve_metrics()
        next_sample = 0.0
        try:
            while True:
                returncode = process.poll()
                if returncode is not None:
                    self.sampler.refresh_progress()
                    return returncode
                now = time.monotonic() - self.started
                if now >= next_sample:
                    self.sampler.sample(self.log.total_bytes)
                    next_sample = now + _SAMPLE_EVERY_S
                watch.observe(self.log, self.sampler.live_pids)
                if self.interrupt_held:
                    self._capture_interrupted(now)
                self._check_peer_hang(now)
                if not self.killed:
                    self._check_progress(now)
                if self.killed:
                    return process.wait()
                with contextlib.suppress(Exception):
                    process.wait(timeout=_TICK_S)
        finally:
            self.sampler.close()
            if metrics is not None:
                metrics.close()

    def _serve_metrics(self) -> MetricsServer | None:
        """The /metrics endpoint when asked for, read from the sampler and tracker at each
        scrape; it is started once they exist, after the job."""
        if not self.options.metrics_port:
            return None
        from hangdoctor.supervise.metrics import JobState, serve_metrics

        state = JobState(
            statuses=lambda: self.sampler.statuses,
            tracker=self.tracker,
            hang=self._hang_in_force,
            elapsed_s=lambda: time.monotonic() - self.started,
        )
        return serve_metrics(state, self.options.metrics_port, self.options.metrics_addr)

    def _hang_in_force(self) -> HangDecision | None:
        current = self.current  # read once: the loop may clear it meanwhile
        return current.decision if current is not None else None

    def _counters(self) -> Counters:
        last = self.sampler.timeline[-1] if self.sampler.timeline else None
        return Counters(
            output_bytes=self.novel.update(self.log.total_bytes),
            steps=last.steps if last else 0,
            batches=last.batches if last else 0,
            collectives=last.collectives if last else 0,
            losses=last.losses if last else 0,
            nonfinite_losses=last.nonfinite_losses if last else 0,
            heartbeats=last.heartbeats if last else 0,
            phase_moves=last.phase_moves if last else 0,
        )

    def _note_phases(self, now: float) -> None:
        """Tell the tracker the phase the job says it is in (`hangdoctor.phase`)."""
        phases = (
            [(p.name, p.budget_s, p.entered_at) for p in s.phases]
            for s in self.sampler.statuses
            if s.exiting_at is None
        )
        self.tracker.in_phase(*phase_in_force(phases, time.time(), now))

    def _check_progress(self, now: float) -> None:
        recent = self.sampler.activity(window_s=_SAMPLE_EVERY_S)
        self.tracker.elapse(now, recent.fair_share if recent is not None else 1.0)
        progressed = self.tracker.observe(now, self._counters())
        self._note_phases(now)
        if self.current is not None:
            # What a job prints as a forwarded signal (Ctrl-C) ends it, its KeyboardInterrupt
            # traceback, is not the hang resolving: the final report keeps the hang.
            if progressed and not self.received:
                _say(
                    _(
                        "progress resumed {seconds:.0f} s after the hang was declared; watching again",
                        seconds=now - self.current.decision.declared_s,
                    )
                )
                self.current = None
                self.still_hung = None
            else:
                self._say_still_hung(now)
                if now - self.current.captured_at_s >= max(10.0, self.tracker.timeout_s):
                    self._capture(self.current.decision, now, again=True)
            return
        busy = self._note_activity(now)
        if self.tracker.wants_peek(now, busy):
            from hangdoctor.supervise.compile_peek import compiling
            from hangdoctor.supervise.device_peek import waits_for_device

            busy_pids = self.sampler.busy_pids(window_s=3.0, cores=_BUSY_CORES)
            waits = waits_for_device(busy_pids, self.options.native_stacks)
            self.tracker.peeked(
                now,
                waits,
                compiling=not waits
                and compiling(self.sampler.live_pids(), self.sampler.compiler_pids()),
            )
        decision = self._proven(now) if not busy else None
        decision = decision or self.tracker.check(now, busy=busy)
        if decision is None:
            return
        self._capture(decision, now, again=False)
        self._end_if_asked()

    def _proven(self, now: float) -> HangDecision | None:
        """A hang declared now because two looks at the idle job's stacks prove it
        (`supervise.proof_watch`), else None."""
        tracker = self.tracker
        if not self.options.prove or tracker.phase is not None:
            return None
        if not self.proofs.due(now, tracker.idle_since_s, tracker.timeout_s):
            return None
        from hangdoctor.supervise.proof_peek import prove

        assert self.launched is not None
        pid, record = self.launched.process.pid, self._record(None, None, None, False)
        gpus, status_dir = self.sampler.gpus, self.status_dir
        found, _failure = bounded.call(
            "proof", lambda: prove(pid, record, gpus, status_dir), _PROOF_LIMIT_S
        )
        now = time.monotonic() - self.started
        proof = self.proofs.saw(now, found)
        return tracker.proven(now, proof) if proof is not None else None

    def _say_still_hung(self, now: float) -> None:
        """Say that the hang holds, backing off (StillHungNotices): a job kept hung for hours
        must not bury its log under a notice every few seconds."""
        notices, current = self.still_hung, self.current
        if notices is None or current is None:
            return
        age = notices.due(now)
        if age is None:
            return
        path = self.report_dir / f"hang-{current.number}" / "report.md"
        minutes = round(age / 60)
        if minutes < 120:
            _say(
                _n(
                    "still hung {count} minute after the hang was declared (report: {path})",
                    "still hung {count} minutes after the hang was declared (report: {path})",
                    minutes,
                    path=str(path),
                )
            )
        else:
            _say(
                _n(
                    "still hung {count} hour after the hang was declared (report: {path})",
                    "still hung {count} hours after the hang was declared (report: {path})",
                    round(age / 3600),
                    path=str(path),
                )
            )

    def _check_peer_hang(self, now: float) -> None:
        """Another node declared a hang: capture this node at once, so that every node's
        stacks are of the same moment, even where this node's ranks still look busy."""
        session = self.session
        if session is None or self.current is not None or self.killed:
            return
        epoch = session.peer_hang()
        if epoch is None:
            return
        _say(_("another node declared a hang: capturing this node's processes with it"))
        session.took(epoch)
        recent = self.sampler.activity()
        busy = self.sampler.runnable() or (recent is not None and recent.computing)
        decision = HangDecision(
            "busy" if busy else "idle", self.tracker.last_progress_s, now, self.tracker.timeout_s
        )
        self._capture(decision, now, again=False, epoch=epoch)
        self._end_if_asked()

    def _end_if_asked(self) -> None:
        """`--on-hang kill`: end the job once its hang is captured (on every node)."""
        if self.options.on_hang == "kill" and self.launched is not None:
            _say(
                _(
                    "ending the job (SIGTERM, then SIGKILL after {seconds:g} s)",
                    seconds=self.options.kill_grace_s,
                )
            )
            self.log.end_evidence()
            terminate_tree(
                self.launched.process.pid,
                self.launched.pgid,
                self.options.kill_grace_s,
                spare={self.relay.pid} if self.relay else set(),
            )
            self.killed = True

    def _note_activity(self, now: float) -> bool:
        """Tell the tracker what the whole tree did (computing, moving data, compiling);
        True when it is busy: a process runnable, or the tree computing over the last
        seconds, on whatever share of the machine it gets."""
        # The times are the samples' (when the work was seen), not this tick's; what follows a
        # look for a proof may be the look's own doing (`ProofWatch.echoes`).
        sampled_at = self.sampler.sampled_at_s
        runnable = self.sampler.runnable(training=True)
        recent = self.sampler.activity(window_s=_SAMPLE_EVERY_S, training=True)
        echo = self.proofs.echoes(now)
        if (runnable or (recent is not None and recent.computing)) and not echo:
            self.tracker.computed(sampled_at if sampled_at is not None else now)
        moved_at = self.sampler.moved_at_s()
        if moved_at is not None and not echo:
            self.tracker.moved(moved_at)
        activity = self.sampler.activity()
        if activity is not None and activity.compilers:
            self.tracker.compiled(now)
        working = self.sampler.activity(training=True)
        return runnable or (working is not None and working.computing)

    # capture and reports ---------------------------------------------------------------------
    def _record(
        self, ended_at: float | None, exit_code: int | None, sig: int | None, interrupted: bool
    ) -> JobRecord:
        from hangdoctor.evidence.model import JobRecord

        hang = self.current.decision if self.current else None
        return JobRecord(
            command=redact_argv(self.options.command),
            started_at=self.started_wall,
            ended_at=ended_at,
            exit_code=exit_code,
            signal=sig,
            interrupted=interrupted,
            killed_by_hangdoctor=self.killed,
            hang_timeout_s=self.tracker.timeout_s,
            last_progress_s=round(self.tracker.last_progress_s, 3),
            hang_declared_s=round(hang.declared_s, 3) if hang else None,
            hang_kind=hang.kind if hang else None,
            hang_phase=hang.phase if hang else None,
            job_phase=hang.job_phase if hang else None,
            progress=tuple(with_sync_source(s) for s in self.sampler.statuses),
            timeline=tuple(self.sampler.timeline),
            output_bytes=self.log.total_bytes,
            output_tail=tuple(redact_value(line) for line in self.log.tail_lines()),
            faults=tuple(read_fault_logs(self.status_dir)) if self.status_dir else (),
            stopped=self._stopped_stacks(),
            thread_deaths=tuple(read_thread_deaths(self.status_dir)) if self.status_dir else (),
            uncaught=tuple(read_uncaught(self.status_dir)) if self.status_dir else (),
            process_ends=tuple(read_process_ends(self.status_dir)) if self.status_dir else (),
            offloop_calls=tuple(read_offloop_calls(self.status_dir)) if self.status_dir else (),
        )

    def _stopped_stacks(self) -> tuple[FaultLog, ...]:
        """Each process's stack as the job failed: where SIGTERM stopped it, else where it
        was when a peer's collective timed out (FailureWatch)."""
        if self.status_dir is None:
            return ()
        stopped = read_fault_logs(self.status_dir, STOPPED_GLOB, when="sigterm")
        seen = {s.pid for s in stopped}
        early = self.failure_watch.stacks() if self.failure_watch is not None else []
        return (*stopped, *(s for s in early if s.pid not in seen))

    def _capture(
        self, decision: HangDecision, now: float, again: bool, epoch: int | None = None
    ) -> None:
        from hangdoctor.report.directory import write_report_dir
        from hangdoctor.report.render_terminal import render_terminal, summary_console
        from hangdoctor.supervise.hang_capture import (
            HangCapture,
            HangReport,
            capture_hang,
            signature,
        )

        assert self.launched is not None
        session = self.session
        if session is not None and again:
            return  # one job-wide capture per hang: the others do not capture again with us
        peer = epoch is not None  # another node declared this hang
        if session is not None and epoch is None:
            epoch = session.declare()
        how = _(_HANG_KINDS.get(decision.kind, decision.kind))
        if decision.phase is not None:
            how = f"{how}, {decision.phase}"
        if peer:
            _say(_("captured with the other nodes ({how} here)", how=how))
        elif not again and decision.proven is not None:
            _say(
                _(
                    "no progress for {seconds:.0f} s, and the stacks prove that none can come: "
                    "{why}; hang declared before the threshold, capturing every process",
                    seconds=decision.declared_s - decision.last_progress_s,
                    why=decision.proven,
                )
            )
        elif not again:  # a hang that holds is said apart, backing off (_say_still_hung)
            _say(
                _(
                    "no progress for {seconds:.0f} s ({how}): hang declared, capturing every process",
                    seconds=decision.declared_s - decision.last_progress_s,
                    how=how,
                )
            )
        job = HangCapture(
            pid=self.launched.process.pid,
            status_dir=self.status_dir,
            ranks=sum(1 for s in self.sampler.statuses if s.rank is not None),
            started_wall=self.started_wall,
            native_stacks=self.options.native_stacks,
            gaps=self.sampler.gaps(),
            gpus=self.sampler.gpus,
        )
        record = self._record(None, None, None, False)
        # Every probe has its own time limit; this one bounds them all, so that whatever
        # stalls (a /proc read of a process stuck in the kernel) the loop goes on, and a job
        # to be ended is ended.
        processes = len(self.sampler.timeline[-1].processes) if self.sampler.timeline else 1
        captured, failure = bounded.call(
            "hang capture",
            lambda: capture_hang(job, decision, record),
            _CAPTURE_LIMIT_S + _CAPTURE_LIMIT_PER_PROCESS_S * processes,
        )
        if captured is None:
            if again and self.current is not None:
                # Tried again at the usual interval, not at every tick, and said once.
                self.current.captured_at_s = now
                if self.current.failed_again:
                    return
                self.current.failed_again = True
            reason = failure.message if failure is not None else _("no result")
            _say(_("capture failed: {reason}", reason=reason))
            return
        bundle, report = captured
        self.system = bundle.system
        number = len(self.hangs) + 1
        directory = self.report_dir / f"hang-{number}"
        if session is not None and epoch is not None:
            bundle, report = self._whole_job(session, epoch, bundle, report, directory)
        seen = signature(report)
        if again and self.current is not None and seen == self.current.signature:
            self.current.captured_at_s = now
            return
        try:
            report = write_report_dir(directory, report, bundle)
        except OSError as error:  # a full disk: say so, keep watching, the job goes on
            _say(
                _(
                    "warning: cannot write {path} ({error})",
                    path=directory,
                    error=error.strerror or error,
                )
            )
        state = HangReport(decision, number, seen, bundle, report, now)
        self.hangs.append(state)
        self.current = state
        if again:
            _say(_("still hung, and the picture changed:"))
        else:
            self.still_hung = StillHungNotices(decision.declared_s)
        if report.root_cause is None:
            _say(_("no rule explains it yet; the stacks of every process are in the report"))
        with contextlib.suppress(Exception):  # the summary is a courtesy: never fail on it
            render_terminal(report, summary_console(stderr=True), str(directory), max_findings=1)

    def _whole_job(
        self, session: NodeSession, epoch: int, bundle: Bundle, report: Report, directory: Path
    ) -> tuple[Bundle, Report]:
        """Send this node's capture to the other nodes, take theirs, and diagnose the whole
        job; this node's own report goes to `this-node/` beside the job's."""
        from hangdoctor.pipeline import Context, Mode, diagnose
        from hangdoctor.report.directory import write_report_dir

        with contextlib.suppress(OSError):
            write_report_dir(directory / "this-node", report, bundle)
        merged = session.whole_job(epoch, bundle)
        if merged.nodes is not None:
            nodes = merged.nodes.model_copy(update={"this_node": session.plan.me})
            merged = merged.model_copy(update={"nodes": nodes})
            got = sum(1 for n in nodes.nodes if n.answered)
            _say(
                _n(
                    "the whole job: evidence of {count} node of {nodes}",
                    "the whole job: evidence of {count} nodes of {nodes}",
                    got,
                    nodes=len(nodes.nodes),
                )
            )
        if self.options.on_hang == "kill":
            session.finish(epoch)
        return merged, diagnose(merged, Context(mode=Mode.HANG, hang=report.hang))

    def _capture_interrupted(self, now: float) -> None:
        """The user stopped the job before any hang was declared: capture the live tree (where
        every process was), then pass the Ctrl-C on."""
        from hangdoctor.supervise.hang_capture import HangCapture, capture_hang
        from hangdoctor.supervise.policy import HangDecision

        assert self.launched is not None
        _say(_("interrupted: capturing every process before passing the interrupt on"))
        job = HangCapture(
            pid=self.launched.process.pid,
            status_dir=self.status_dir,
            ranks=sum(1 for s in self.sampler.statuses if s.rank is not None),
            started_wall=self.started_wall,
            native_stacks=self.options.native_stacks,
            gaps=self.sampler.gaps(),
            gpus=self.sampler.gpus,
        )
        decision = HangDecision("idle", self.tracker.last_progress_s, now, self.tracker.timeout_s)
        processes = len(self.sampler.timeline[-1].processes) if self.sampler.timeline else 1
        captured, _failure = bounded.call(
            "interrupt capture",
            lambda: capture_hang(job, decision, self._record(None, None, None, True)),
            _CAPTURE_LIMIT_S + _CAPTURE_LIMIT_PER_PROCESS_S * processes,
        )
        if captured is not None:
            self.interrupted_capture = captured[0]
        self.interrupt_held = False
        with contextlib.suppress(OSError):
            os.killpg(self.launched.pgid, signal.SIGINT)

    def _finish(self, returncode: int) -> int:
        from hangdoctor.report.render_markdown import verdict_word
        from hangdoctor.supervise.final_report import ending, final_report

        end = ending(returncode, bool(self.received), self.killed)
        record = self._record(time.time(), end.exit_code, end.signal, end.interrupted)
        # The job's exit code is what scripts around it act on: no failure of ours replaces it.
        try:
            report = final_report(
                self.report_dir,
                end,
                record,
                self.current,
                self.system,
                self.launched.process.pid if self.launched else 0,
                self._artifacts(),
                gaps=self.sampler.gaps(),
                live=self.interrupted_capture,
            )
        except OSError as error:
            _say(
                _(
                    "job {verdict} (exit {code}); warning: cannot write the report to {path} "
                    "({error})",
                    verdict=verdict_word(end.verdict),
                    code=end.final_code,
                    path=self.report_dir,
                    error=error.strerror or error,
                )
            )
            return end.final_code
        except Exception as error:
            if os.environ.get("HANGDOCTOR_DEBUG"):
                traceback.print_exc()
            _say(
                _(
                    "job {verdict} (exit {code}); internal error while writing the report: "
                    "{error_type}: {error} (please report it)",
                    verdict=verdict_word(end.verdict),
                    code=end.final_code,
                    error_type=type(error).__name__,
                    error=error,
                )
            )
            return end.final_code
        root = report.root_cause
        duration = record.ended_at - record.started_at if record.ended_at else 0.0
        fields = {
            "verdict": verdict_word(end.verdict),
            "code": end.final_code,
            "seconds": duration,
        }
        if root is not None and end.verdict != "completed":
            line = _(
                "job {verdict} (exit {code}) after {seconds:.1f} s; {category}: {title}",
                category=root.category,
                title=root.title,
                **fields,
            )
        else:
            line = _("job {verdict} (exit {code}) after {seconds:.1f} s", **fields)
        _say(line)
        _say(_("report: {path}", path=self.report_dir / "report.md"))
        return end.final_code

    def _artifacts(self) -> dict[str, str]:
        artifacts = {"log": "output.log"}
        for state in self.hangs:
            artifacts[f"hang-{state.number}"] = f"hang-{state.number}/report.json"
        return artifacts


def run_unsupervised(command: tuple[str, ...]) -> int:
    """Run the job as if hangdoctor were not there: same terminal, same signals, its own exit
    status (hangdoctor's only when the command cannot be started)."""
    try:
        os.execvp(command[0], list(command))
    except FileNotFoundError as error:
        raise LaunchError(
            _("command not found: {command}", command=command[0]), ExitCode.COMMAND_NOT_FOUND
        ) from error
    except OSError as error:
        raise LaunchError(
            _("cannot run {command}: {error}", command=command[0], error=error.strerror or error),
            ExitCode.NOT_EXECUTABLE,
        ) from error


def run_supervised(options: RunOptions) -> int:
    """Run a job under supervision; returns the exit code to exit with."""
    return Supervisor(options).run()

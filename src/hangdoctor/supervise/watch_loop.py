"""The watch of a running job, tick by tick until it exits: sample its process tree, tell the
hang policy (`policy.ProgressTracker`) what the job did, and capture the job (`job_capture`) when
the policy, a proof in its stacks (`proof_watch`) or another node declares a hang."""

from __future__ import annotations

import contextlib
import os
import signal
import time
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from hangdoctor import bounded
from hangdoctor.i18n import _, _n
from hangdoctor.supervise.failure_watch import FailureWatch
from hangdoctor.supervise.job_capture import JobCapture
from hangdoctor.supervise.launch import Launched
from hangdoctor.supervise.novel_output import NovelOutput
from hangdoctor.supervise.output import LogView
from hangdoctor.supervise.policy import Counters, HangDecision, ProgressTracker, phase_in_force
from hangdoctor.supervise.proof_watch import ProofWatch
from hangdoctor.supervise.run_options import RunOptions
from hangdoctor.supervise.say import say
from hangdoctor.supervise.terminate import terminate_tree

if TYPE_CHECKING:
    from hangdoctor.supervise.metrics import MetricsServer
    from hangdoctor.supervise.sampler import TreeSampler

TICK_S = 0.2
SAMPLE_EVERY_S = 1.0
_BUSY_CORES = 0.3  # a process looked at for a device wait uses more than this share of a CPU
_PROOF_LIMIT_S = 10.0  # one look at an idle job's stacks for a proof (proof_peek)


@dataclass
class Interrupts:
    """The signals the user sent the job through hangdoctor (`Supervisor`): each is passed on
    to the job, except a first Ctrl-C before any hang, held until the tree is captured."""

    received: list[int] = field(default_factory=list)
    held: bool = False


class WatchLoop:
    """Watches the job `launched` until it exits (`run`); `killed`: hangdoctor ended it."""

    def __init__(
        self,
        options: RunOptions,
        launched: Launched,
        started: float,
        capture: JobCapture,
        interrupts: Interrupts,
        spare_pid: int | None = None,
    ) -> None:
        recorder = capture.recorder
        self.options = options
        self.launched = launched
        self.started = started  # time.monotonic() at the launch
        self.capture = capture
        self.hangs = capture.hangs
        self.sampler: TreeSampler = recorder.sampler
        self.tracker: ProgressTracker = recorder.tracker
        self.log: LogView = recorder.log
        self.failure_watch: FailureWatch = recorder.failure_watch
        self.interrupts = interrupts
        self.spare_pid = spare_pid  # not ended with the job: the relay of its output
        self.killed = False
        self.proofs = ProofWatch()  # looks at an idle job's stacks before the threshold
        # What of the output counts as progress: lines not seen before (novel_output).
        log = self.log
        self.novel = NovelOutput(lambda offset, count: log.read_range(offset, count))

    def holds_interrupt(self) -> bool:
        """Whether a first Ctrl-C is held until the tree is captured: no hang declared yet."""
        return self.hangs.current is None and not self.killed

    def run(self) -> int:
        """Watch until the job exits; its returncode (Popen's)."""
        process = self.launched.process
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
                    next_sample = now + SAMPLE_EVERY_S
                self.failure_watch.observe(self.log, self.sampler.live_pids)
                if self.interrupts.held:
                    self._capture_interrupted(now)
                self._check_peer_hang(now)
                if not self.killed:
                    self._check_progress(now)
                if self.killed:
                    return process.wait()
                with contextlib.suppress(Exception):
                    process.wait(timeout=TICK_S)
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

        sampler = self.sampler
        state = JobState(
            statuses=lambda: sampler.statuses,
            tracker=self.tracker,
            hang=self.hangs.decision,
            elapsed_s=lambda: time.monotonic() - self.started,
        )
        return serve_metrics(state, self.options.metrics_port, self.options.metrics_addr)

    def _capture_interrupted(self, now: float) -> None:
        """The user stopped the job before any hang was declared: capture the live tree, then
        pass the Ctrl-C on."""
        self.capture.interrupt(now)
        self.interrupts.held = False
        with contextlib.suppress(OSError):
            os.killpg(self.launched.pgid, signal.SIGINT)

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
        recent = self.sampler.activity(window_s=SAMPLE_EVERY_S)
        self.tracker.elapse(now, recent.fair_share if recent is not None else 1.0)
        progressed = self.tracker.observe(now, self._counters())
        self._note_phases(now)
        if self.hangs.current is not None:
            self._watch_hang(now, progressed)
            return
        busy = self._note_activity(now)
        if self.tracker.wants_peek(now, busy):
            self._peek(now)
        decision = self._proven(now) if not busy else None
        decision = decision or self.tracker.check(now, busy=busy)
        if decision is None:
            return
        self.capture.hang(decision, now, again=False)
        self._end_if_asked()

    def _watch_hang(self, now: float, progressed: bool) -> None:
        """A hang is in force: it resolved, or it holds (said backing off, and the job looked
        at again at the usual interval)."""
        current = self.hangs.current
        assert current is not None
        # What a job prints as a forwarded signal (Ctrl-C) ends it, its KeyboardInterrupt
        # traceback, is not the hang resolving: the final report keeps the hang.
        if progressed and not self.interrupts.received:
            say(
                _(
                    "progress resumed {seconds:.0f} s after the hang was declared; watching again",
                    seconds=now - current.decision.declared_s,
                )
            )
            self.hangs.resumed()
            return
        self._say_still_hung(now)
        if now - current.captured_at_s >= max(10.0, self.tracker.threshold_s):
            self.capture.hang(current.decision, now, again=True)

    def _peek(self, now: float) -> None:
        """Look once at the busy processes' stacks: do they wait (for the device, or spin in
        the machinery), or compile?"""
        from hangdoctor.supervise.compile_peek import compiling
        from hangdoctor.supervise.device_peek import waits_rather_than_computes

        busy_pids = self.sampler.busy_pids(window_s=3.0, cores=_BUSY_CORES)
        waits = waits_rather_than_computes(busy_pids, self.options.native_stacks)
        self.tracker.peeked(
            now,
            waits,
            compiling=not waits
            and compiling(self.sampler.live_pids(), self.sampler.compiler_pids()),
        )

    def _proven(self, now: float) -> HangDecision | None:
        """A hang declared now because two looks at the idle job's stacks prove it
        (`supervise.proof_watch`), else None."""
        tracker = self.tracker
        if not self.options.prove or tracker.phase is not None:
            return None
        if not self.proofs.due(now, tracker.idle_since_s, tracker.threshold_s):
            return None
        from hangdoctor.supervise.proof_peek import prove

        pid, record = self.launched.process.pid, self.capture.recorder.record()
        gpus, status_dir = self.sampler.gpus, self.capture.recorder.status_dir
        found, _failure = bounded.call(
            "proof", lambda: prove(pid, record, gpus, status_dir), _PROOF_LIMIT_S
        )
        now = time.monotonic() - self.started
        proof = self.proofs.saw(now, found)
        return tracker.proven(now, proof) if proof is not None else None

    def _say_still_hung(self, now: float) -> None:
        """Say that the hang holds, backing off (StillHungNotices): a job kept hung for hours
        must not bury its log under a notice every few seconds."""
        notices, current = self.hangs.still_hung, self.hangs.current
        if notices is None or current is None:
            return
        age = notices.due(now)
        if age is None:
            return
        path = self.capture.report_dir / f"hang-{current.number}" / "report.md"
        minutes = round(age / 60)
        if minutes < 120:
            say(
                _n(
                    "still hung {count} minute after the hang was declared (report: {path})",
                    "still hung {count} minutes after the hang was declared (report: {path})",
                    minutes,
                    path=str(path),
                )
            )
        else:
            say(
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
        session = self.capture.session
        if session is None or self.hangs.current is not None or self.killed:
            return
        epoch = session.peer_hang()
        if epoch is None:
            return
        say(_("another node declared a hang: capturing this node's processes with it"))
        session.took(epoch)
        recent = self.sampler.activity()
        busy = self.sampler.runnable() or (recent is not None and recent.computing)
        decision = HangDecision(
            "busy" if busy else "idle", self.tracker.last_progress_s, now, self.tracker.threshold_s
        )
        self.capture.hang(decision, now, again=False, epoch=epoch)
        self._end_if_asked()

    def _end_if_asked(self) -> None:
        """`--on-hang kill`: end the job once its hang is captured (on every node)."""
        if self.options.on_hang != "kill":
            return
        say(
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
            spare={self.spare_pid} if self.spare_pid is not None else set(),
        )
        self.killed = True

    def _compiling_in_process(self) -> bool:
        """Whether a live process says it compiles now (a jitted function's first call, a
        tf.function's tracing: `ProgressStatus.compiling`)."""
        return any(s.compiling for s in self.sampler.statuses if s.exiting_at is None)

    def _note_activity(self, now: float) -> bool:
        """Tell the tracker what the whole tree did (computing, moving data, compiling);
        True when it is busy: a process runnable, or the tree computing over the last
        seconds, on whatever share of the machine it gets."""
        # The times are the samples' (when the work was seen), not this tick's; what follows a
        # look for a proof may be the look's own doing (`ProofWatch.echoes`).
        sampled_at = self.sampler.sampled_at_s
        runnable = self.sampler.runnable(training=True)
        recent = self.sampler.activity(window_s=SAMPLE_EVERY_S, training=True)
        echo = self.proofs.echoes(now)
        if (runnable or (recent is not None and recent.computing)) and not echo:
            self.tracker.computed(sampled_at if sampled_at is not None else now)
        moved_at = self.sampler.moved_at_s()
        if moved_at is not None and not echo:
            self.tracker.moved(moved_at)
        activity = self.sampler.activity()
        if activity is not None and activity.compilers:
            self.tracker.compiled(now)
        if self._compiling_in_process():
            self.tracker.compiled(now)
        working = self.sampler.activity(training=True)
        return runnable or (working is not None and working.computing)

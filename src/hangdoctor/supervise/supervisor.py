"""The supervisor: owns the job, keeps its output flowing, passes the user's signals on, and
runs the watch (`watch_loop`), the captures at a hang (`job_capture`) and the end (`finish`).
What happens at a hang lives in `hang_capture`, the report at the end in `final_report`."""

from __future__ import annotations

import contextlib
import os
import signal
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from types import FrameType
from typing import TYPE_CHECKING, BinaryIO

from hangdoctor.i18n import _
from hangdoctor.instrument import instrumented_environment
from hangdoctor.private_files import make_dir, open_log
from hangdoctor.supervise.failure_watch import FailureWatch
from hangdoctor.supervise.finish import ReportingWarmUp, finish
from hangdoctor.supervise.hangs_seen import HangsSeen
from hangdoctor.supervise.job_capture import JobCapture
from hangdoctor.supervise.job_record import JobRecorder
from hangdoctor.supervise.launch import (
    Launched,
    become_subreaper,
    cannot_start,
    launch,
    take_terminal_back,
)
from hangdoctor.supervise.output import Channel, LogView, open_channels, resize
from hangdoctor.supervise.policy import HangPolicy, ProgressTracker
from hangdoctor.supervise.relay_process import RelayProcess, start_relay_process
from hangdoctor.supervise.run_options import RunOptions
from hangdoctor.supervise.say import say
from hangdoctor.supervise.terminate import reap_orphans
from hangdoctor.supervise.watch_loop import Interrupts, WatchLoop

if TYPE_CHECKING:
    from hangdoctor.nodes.session import NodeSession, SessionPlan
    from hangdoctor.supervise.sampler import TreeSampler

__all__ = ["RunOptions", "Supervisor", "run_supervised", "run_unsupervised"]

# The job is started before anything heavy is imported: the capture, the rules, the reports
# and pydantic are loaded while the job itself starts up, not ahead of it.

_FORWARDED = (signal.SIGINT, signal.SIGTERM, signal.SIGHUP)
# What signal.signal() takes and returns (typeshed's private signal._HANDLER).
_Handler = Callable[[int, FrameType | None], object] | int | signal.Handlers | None
_DRAIN_S = 5.0  # after the job exits, how long its leftover children may keep the output open


class Supervisor:
    """Runs one job to its end."""

    def __init__(self, options: RunOptions) -> None:
        self.options = options
        self.report_dir = options.report_dir
        self.status_dir = options.report_dir / "progress" if options.instrument else None
        self.interrupts = Interrupts()
        self.launched: Launched | None = None
        self.channels: list[Channel] = []
        self.session: NodeSession | None = None  # a job of several nodes (nodes/)
        self.sampler: TreeSampler | None = None  # made once the job runs
        self.loop: WatchLoop | None = None  # made once the job runs

    # signals ---------------------------------------------------------------------------------
    def _forward(self, signum: int, _frame: object) -> None:
        """Pass a signal on to the job; a first Ctrl-C before any hang was declared is held:
        the tree is captured, then it is passed on (a second one is passed on at once)."""
        first = not self.interrupts.received
        self.interrupts.received.append(signum)
        if (
            signum == signal.SIGINT
            and first
            and self.launched is not None
            and (self.loop is None or self.loop.holds_interrupt())
        ):
            self.interrupts.held = True
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

    # the run ---------------------------------------------------------------------------------
    def run(self) -> int:
        """Run the job; returns the exit code hangdoctor should exit with."""
        options = self.options
        plan = self._session_plan()
        if plan is not None and plan.report_dir is not None:
            self._report_to(plan.report_dir)
        log_file = self._open_report_dir()
        if log_file is None:
            return run_unsupervised(options.command)
        env = dict(os.environ)
        if self.status_dir is not None:
            env = instrumented_environment(env, self.status_dir)
        self.channels = open_channels()
        log_path = self.report_dir / "output.log"
        # Unbuffered: every chunk goes straight to the file, and nothing is lost if we die.
        log = LogView(log_file)
        # The relay exists before the job does, and outlives us if we die (relay_process).
        relay = start_relay_process(self.channels, log.file, str(log_path), _DRAIN_S)
        become_subreaper()
        previous = self._install_signals()
        started = time.monotonic()
        started_wall = time.time()
        try:
            self.launched = launch(options.command, env, self.channels)
            if plan is not None:
                self._join_nodes(plan)
            warm_up = ReportingWarmUp()
            warm_up.start()
            loop = self._watch(log, relay, started, started_wall)
            returncode = loop.run()
            relay.finish(_DRAIN_S, copied=lambda: log.total_bytes)
            reap_orphans(exclude={self.launched.process.pid, relay.pid})
            take_terminal_back(self.launched)
        finally:
            if self.session is not None:
                self.session.stop()
            for sig, handler in previous.items():
                signal.signal(sig, handler)
            if self.launched is not None and self.launched.process.poll() is None:
                relay.release()  # we are failing, not the job: leave it its output
            else:
                relay.finish(0.0)
            log.close()
        return finish(
            returncode, loop.capture, warm_up, bool(self.interrupts.received), loop.killed
        )

    def _watch(
        self, log: LogView, relay: RelayProcess, started: float, started_wall: float
    ) -> WatchLoop:
        """What watches the launched job: its sampler, the hang policy, the captures."""
        from hangdoctor.supervise.sampler import TreeSampler

        assert self.launched is not None
        pid = self.launched.process.pid
        options = self.options
        policy = HangPolicy(
            hang_timeout_s=options.hang_timeout_s, compile_budget_s=options.compile_budget_s
        )
        self.sampler = TreeSampler(pid, started, self.status_dir)
        recorder = JobRecorder(
            command=options.command,
            started_wall=started_wall,
            status_dir=self.status_dir,
            sampler=self.sampler,
            tracker=ProgressTracker(policy),
            log=log,
            failure_watch=FailureWatch(self.status_dir),
            hangs=HangsSeen(),
        )
        capture = JobCapture(
            pid,
            self.report_dir,
            recorder,
            self.session,
            native_stacks=options.native_stacks,
            ending_job=options.on_hang == "kill",
        )
        self.loop = WatchLoop(
            options, self.launched, started, capture, self.interrupts, spare_pid=relay.pid
        )
        return self.loop

    # a job of several nodes ------------------------------------------------------------------
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
            say(_("warning: cannot tell which node of the job this is ({error})", error=error))
            return None

    def _join_nodes(self, plan: SessionPlan) -> None:
        from hangdoctor.nodes.session import NodeSession

        def ranks() -> tuple[int, ...]:
            statuses = self.sampler.statuses if self.sampler is not None else []
            return tuple(sorted({s.rank for s in statuses if s.rank is not None}))

        self.session = NodeSession(plan, ranks)
        self.session.start()
        say(
            _(
                "node {node} of {nodes}: meeting the other nodes via {transport}",
                node=plan.me,
                nodes=plan.expected or "?",
                transport=plan.transport,
            )
        )

    # the report directory --------------------------------------------------------------------
    def _report_to(self, directory: Path) -> None:
        self.report_dir = directory
        if self.status_dir is not None:
            self.status_dir = directory / "progress"

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
            say(
                _(
                    "warning: {problem}, nor to a temporary folder: running the job without "
                    "hangdoctor",
                    problem=problem,
                )
            )
            return None
        say(_("warning: {problem}; writing it to {path} instead", problem=problem, path=fallback))
        self._report_to(fallback)
        return log_file

    def _make_report_dir(self, directory: Path) -> BinaryIO:
        make_dir(directory)
        if self.options.instrument:
            make_dir(directory / "progress")
        return open_log(directory / "output.log")


def run_unsupervised(command: tuple[str, ...]) -> int:
    """Run the job as if hangdoctor were not there: same terminal, same signals, its own exit
    status (hangdoctor's only when the command cannot be started)."""
    try:
        os.execvp(command[0], list(command))
    except OSError as error:
        raise cannot_start(command[0], error) from error


def run_supervised(options: RunOptions) -> int:
    """Run a job under supervision; returns the exit code to exit with."""
    return Supervisor(options).run()

"""When is a job hung? A pure model of progress and thresholds, fed by the supervisor.

Progress is new output or a training event (optimizer step, batch, collective). A job in which
nothing computes is hung `timeout` seconds after its last progress or its last computation,
whichever came later (so a long silent start-up such as `import torch` does not eat into the
wait for the first batch); one that computes without visible progress (a long silent
evaluation, a checkpoint being compressed) only after `busy_factor` times as long.

Before the job has shown any progress at all (no output, no training event), one that computes
gets at least `startup_busy_s`: importing torch and a framework, building the model or
compiling can keep a core busy for a minute on a loaded machine, silently.

Steps taken on non-finite losses alone are not progress: a loop that retries on NaN (or skips
the step and tries the next batch, forever NaN) is a livelock, hung after `timeout` like an idle
job although it keeps the CPU busy and the optimizer counting.

A thread waiting for the GPU spins too (CUDA's default synchronisation polls), but it waits, it
does not compute; so does a pool's housekeeping thread re-scanning a dead worker while the
user's threads wait (a daemon's CPU is not training work). When a busy job has gone `timeout`
without progress, the tracker asks for one look at its stacks (`wants_peek`); if every busy
process waits for the device or only spins in the machinery (`peeked`), the job is hung then,
like an idle one.

Data read or written beyond the job's own output (a checkpoint being compressed into an
archive, a dataset being preprocessed) is work the job shows: it restarts the quiet clock as
output does (`moved`), except for a NaN livelock. A spinning loop moves no data.

Compilation (Dynamo, Inductor, Triton, a C++ compiler in the tree) is a phase with its own
budget: when a compiler process was in the tree or the stacks showed the job compiling since the
last progress (`compiled`), a job that computes is hung only after `compile_budget_s` (by
default `compile_factor` times the idle threshold), and the decision says it was compiling.

A job that computes on a loaded machine is slowed, not stuck: other users' processes (or its own
too many workers) leave each runnable task a share of a core. Its quiet time is counted on a
clock that runs at that share (`elapse`), never slower than `MIN_SHARE`: a 9 s busy threshold
on a machine where a task gets a third of a core is 27 s of wall time, in which the job could
compute for 9 s on a core of its own. Waiting does not get slower with load, so an idle job's
quiet time stays wall time.

The job may say which phase it is in (`with hangdoctor.phase("eval", budget_s=900)`): a phase
with a budget of its own replaces the threshold while it runs (`in_phase`), busy or idle, counted
from when it was entered or the last progress, whichever came later. Entering or leaving a
phase is progress (the job moved on), not a training event: it does not stretch the adaptive
threshold, and the usual threshold after a long phase counts from its end.

Without a fixed timeout the threshold adapts:
- until the first training event: a generous start-up budget (model loading, compilation);
- afterwards: `adaptive_factor` times the longest gap seen between training events, within
  [`min_adaptive_s`, `max_adaptive_s`].
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field

#: The smallest share of a core a runnable task is taken to get: a busy job's threshold
#: stretches at most fourfold, so that a machine loaded far beyond its cores still has its busy
#: hangs declared in reasonable time (a torchrun teardown starved to 0.18 of a core for 10 s used
#: 2.6 s of this clock, against a 9 s threshold).
MIN_SHARE = 0.25


@dataclass(frozen=True)
class HangPolicy:
    """Thresholds, in seconds."""

    hang_timeout_s: float | None = None  # `run --hang-timeout`, `watch()`; None: adaptive
    startup_budget_s: float = 300.0
    adaptive_factor: float = 5.0
    min_adaptive_s: float = 60.0
    max_adaptive_s: float = 1800.0
    busy_factor: float = 3.0
    startup_busy_s: float = 60.0
    compile_factor: float = 10.0
    compile_budget_s: float | None = None  # explicit: `run --compile-budget`


@dataclass(frozen=True)
class Counters:
    """What is counted as progress at one moment."""

    output_bytes: int = 0
    steps: int = 0
    batches: int = 0
    collectives: int = 0
    losses: int = 0
    nonfinite_losses: int = 0
    heartbeats: int = 0  # `hangdoctor.heartbeat()`: the job's own training steps
    phase_moves: int = 0  # `hangdoctor.phase()` entered or left

    @property
    def training_events(self) -> int:
        """Events that come from the training loop itself."""
        return self.steps + self.batches + self.collectives + self.heartbeats

    @property
    def finite_losses(self) -> int:
        """Losses seen that were finite numbers."""
        return self.losses - self.nonfinite_losses


@dataclass(frozen=True)
class HangDecision:
    """A declared hang."""

    kind: str  # idle or busy
    last_progress_s: float
    declared_s: float
    threshold_s: float
    phase: str | None = None  # compile: declared while the job compiled, after its budget
    job_phase: str | None = None  # the job's own phase in force (`hangdoctor.phase`), if any
    proven: str | None = None  # declared before the threshold: why the stacks prove it


@dataclass(frozen=True)
class PhaseBudget:
    """The job's own phase with a budget (`hangdoctor.phase`), on the tracker's clock."""

    name: str
    budget_s: float
    entered_s: float


@dataclass
class ProgressTracker:
    """Times in seconds since the job started."""

    policy: HangPolicy
    last: Counters = field(default_factory=Counters)
    last_progress_s: float = 0.0
    last_training_event_s: float | None = None
    longest_training_gap_s: float = 0.0
    last_computed_s: float = 0.0
    #: The last readings advanced only on non-finite losses: a NaN livelock, not progress.
    nonfinite_only: bool = False
    #: Whether the job has shown any progress yet (it is past its silent start-up).
    started_up: bool = False
    #: A look at the stacks since the last progress showed the busy job waiting, not computing:
    #: for the GPU, or in the machinery's housekeeping (`analysis.machinery`).
    spins_waiting: bool = False
    last_peek_s: float | None = None
    #: When the job last read or wrote data at the rate of work (not its output).
    last_moved_s: float = 0.0
    #: When a compiler in the tree, or the stacks, last showed the job compiling.
    last_compiling_s: float | None = None
    #: Seconds of a core's share: wall time weighted by what one runnable task could get.
    share_clock_s: float = 0.0
    share: float = 1.0
    last_elapsed_s: float = 0.0
    share_clock_at_progress_s: float = 0.0
    share_clock_at_moved_s: float = 0.0
    #: The job's phase with a budget of its own, while it runs (`in_phase`).
    phase: PhaseBudget | None = None
    #: The phase the job is in, budget or not, to name in a decision.
    phase_name: str | None = None

    def elapse(self, now_s: float, share: float) -> None:
        """Say what part of a core a runnable task gets now (1.0 on a machine with a core
        free); the share clock runs at that rate from `now_s` on."""
        self._advance(now_s)
        self.share = min(1.0, max(MIN_SHARE, share))

    def _advance(self, now_s: float) -> None:
        self.share_clock_s += max(0.0, now_s - self.last_elapsed_s) * self.share
        self.last_elapsed_s = max(self.last_elapsed_s, now_s)

    def in_phase(self, budget: PhaseBudget | None, name: str | None = None) -> None:
        """Say which phase the job is in now: `budget` replaces the threshold while it is
        given; `name` (the phase, budget or not) is named in a decision."""
        self.phase = budget
        self.phase_name = budget.name if budget is not None else name

    def computed(self, now_s: float) -> None:
        """Record that the job used the CPU just now (not progress, but not idle either)."""
        self.last_computed_s = max(self.last_computed_s, now_s)

    def moved(self, now_s: float) -> None:
        """Record that the job read or wrote data just now: work in progress, as output is."""
        self._advance(now_s)
        if now_s >= self.last_moved_s:
            self.last_moved_s = now_s
            # `now_s` may be a sample's time, before the clock's last advance
            behind_s = max(0.0, self.last_elapsed_s - now_s) * self.share
            self.share_clock_at_moved_s = self.share_clock_s - behind_s

    def compiled(self, now_s: float) -> None:
        """Record that the job compiled just now (a compiler process, a compiling stack)."""
        self.last_compiling_s = max(self.last_compiling_s or 0.0, now_s)

    @property
    def quiet_since_s(self) -> float:
        """Since when the job has shown neither progress nor work on data."""
        if self.nonfinite_only:
            return self.last_progress_s
        return max(self.last_progress_s, self.last_moved_s)

    @property
    def quiet_share_s(self) -> float:
        """`quiet_since_s` on the share clock: how long the job has been quiet in the CPU time
        one of its tasks could have had."""
        since = self.share_clock_at_progress_s
        if not self.nonfinite_only and self.last_moved_s > self.last_progress_s:
            since = self.share_clock_at_moved_s
        return self.share_clock_s - since

    @property
    def compiling(self) -> bool:
        """Whether the job has been seen compiling since it last showed progress."""
        return self.last_compiling_s is not None and self.last_compiling_s >= self.last_progress_s

    @property
    def compile_budget_s(self) -> float:
        """How long a compiling job may go without progress."""
        explicit = self.policy.compile_budget_s
        return explicit if explicit is not None else self.policy.compile_factor * self.threshold_s

    def observe(self, now_s: float, counters: Counters) -> bool:
        """Record a reading; True when it shows progress."""
        self._advance(now_s)
        progressed = counters != self.last and (
            counters.output_bytes > self.last.output_bytes
            or counters.training_events > self.last.training_events
            or counters.phase_moves > self.last.phase_moves
        )
        if counters.nonfinite_losses > self.last.nonfinite_losses:
            self.nonfinite_only = counters.finite_losses == self.last.finite_losses
        elif counters.finite_losses > self.last.finite_losses:
            self.nonfinite_only = False
        if self.nonfinite_only:
            progressed = False
        self.started_up = self.started_up or progressed
        if counters.training_events > self.last.training_events:
            if self.last_training_event_s is not None:
                gap = now_s - self.last_training_event_s
                self.longest_training_gap_s = max(self.longest_training_gap_s, gap)
            self.last_training_event_s = now_s
        self.last = counters
        if progressed:
            self.last_progress_s = now_s
            self.share_clock_at_progress_s = self.share_clock_s
            self.spins_waiting = False
        return progressed

    def wants_peek(self, now_s: float, busy: bool) -> bool:
        """Whether to look at the stacks of a job that uses the CPU but has made no progress for
        the idle threshold: once per quiet spell, then again every threshold."""
        if not busy or self.nonfinite_only or self.spins_waiting:
            return False
        quiet_since = self.quiet_since_s
        if now_s - quiet_since < self.threshold_s:
            return False
        last = self.last_peek_s
        return last is None or last < quiet_since or now_s - last >= self.threshold_s

    def peeked(self, now_s: float, spins_waiting: bool, compiling: bool = False) -> None:
        """Record what the look showed: whether every busy process waits for the GPU, whether
        a stack shows the job compiling."""
        self.last_peek_s = now_s
        self.spins_waiting = spins_waiting
        if compiling:
            self.compiled(now_s)

    @property
    def threshold_s(self) -> float:
        """The idle threshold in force now."""
        policy = self.policy
        if policy.hang_timeout_s is not None:
            return policy.hang_timeout_s
        if self.last_training_event_s is None or self.longest_training_gap_s == 0.0:
            return policy.startup_budget_s
        adaptive = policy.adaptive_factor * self.longest_training_gap_s
        return min(policy.max_adaptive_s, max(policy.min_adaptive_s, adaptive))

    def check(self, now_s: float, busy: bool) -> HangDecision | None:
        """A hang, if the job has gone too long without progress."""
        self._advance(now_s)
        if self.phase is not None:
            return self._check_phase(now_s, busy, self.phase)
        waiting = busy and self.spins_waiting  # spinning in CUDA's synchronisation, a pool's loop
        spinning = busy and self.nonfinite_only  # computing, but only on NaN/Inf losses
        computing = busy and not (waiting or spinning)
        compiling = computing and self.compiling
        threshold = self.threshold_s * (self.policy.busy_factor if computing else 1.0)
        if computing and not self.started_up:
            threshold = max(threshold, self.policy.startup_busy_s)
        if compiling:
            threshold = max(threshold, self.compile_budget_s)
        if computing:
            quiet_s = self.quiet_share_s  # a loaded machine slows the work, not the wait
        else:
            quiet_since = (
                self.quiet_since_s if busy else max(self.quiet_since_s, self.last_computed_s)
            )
            quiet_s = now_s - quiet_since
        if quiet_s < threshold:
            return None
        return HangDecision(
            kind="busy" if busy and not waiting else "idle",
            last_progress_s=self.last_progress_s,
            declared_s=now_s,
            threshold_s=threshold,
            phase="compile" if compiling else None,
            job_phase=self.phase_name,
        )

    @property
    def idle_since_s(self) -> float:
        """Since when an idle job has shown neither progress, nor work on data, nor CPU use."""
        return max(self.quiet_since_s, self.last_computed_s)

    def proven(self, now_s: float, why: str) -> HangDecision:
        """An idle hang declared before the threshold, because the stacks prove it
        (`analysis.proof`)."""
        return HangDecision(
            kind="idle",
            last_progress_s=self.last_progress_s,
            declared_s=now_s,
            threshold_s=now_s - self.idle_since_s,
            job_phase=self.phase_name,
            proven=why,
        )

    def _check_phase(self, now_s: float, busy: bool, phase: PhaseBudget) -> HangDecision | None:
        """Inside a phase with a budget: hung once the budget has passed, in wall time, since
        the phase began or the job last showed progress."""
        quiet_since = max(self.last_progress_s, phase.entered_s)
        if now_s - quiet_since < phase.budget_s:
            return None
        return HangDecision(
            kind="busy" if busy and not self.spins_waiting else "idle",
            last_progress_s=self.last_progress_s,
            declared_s=now_s,
            threshold_s=phase.budget_s,
            job_phase=phase.name,
        )


#: How long after a hang was declared `run` says it still holds (while the job is kept): a
#: notice every few seconds would bury the job's own output and the report's address.
STILL_HUNG_AFTER_S = (60.0, 300.0, 900.0, 3600.0)
STILL_HUNG_EVERY_S = 3600.0  # after the last of them


@dataclass
class StillHungNotices:
    """When to tell the user that a declared hang still holds: 1, 5, 15 and 60 minutes after
    it was declared, then every hour. The job is re-captured more often than that (to see the
    picture change); only the notices back off."""

    declared_s: float
    said: int = 0

    def next_s(self) -> float:
        """The hang's age at which the next notice is due."""
        if self.said < len(STILL_HUNG_AFTER_S):
            return STILL_HUNG_AFTER_S[self.said]
        return STILL_HUNG_AFTER_S[-1] + STILL_HUNG_EVERY_S * (
            self.said - len(STILL_HUNG_AFTER_S) + 1
        )

    def due(self, now_s: float) -> float | None:
        """The hang's age when a notice is due at `now_s` (counted as said), else None. A
        notice missed (a long capture) is not made up: one is said, for every one passed."""
        age = now_s - self.declared_s
        if age < self.next_s():
            return None
        while age >= self.next_s():
            self.said += 1
        return age


#: One phase a process says it is in: (name, budget_s or None, entered_at as Unix time).
PhaseEntry = tuple[str, float | None, float]


def phase_in_force(
    processes: Iterable[Sequence[PhaseEntry]], now_wall: float, now_s: float
) -> tuple[PhaseBudget | None, str | None]:
    """The budget the job's phases set, and the phase to name, from each process's phases
    (outermost first). A process's budget is that of its innermost phase that has one; across
    processes the largest wins (a rank writing a checkpoint while the others wait for it). The
    name is that process's path of phases (`train/eval`); without any budget, the first path."""
    best: tuple[float, str, float] | None = None
    first_name: str | None = None
    for phases in processes:
        if not phases:
            continue
        path = "/".join(name for name, _, _ in phases)
        first_name = first_name or path
        budgeted = [(budget, entered) for _, budget, entered in phases if budget is not None]
        if budgeted:
            budget, entered = budgeted[-1]
            if best is None or budget > best[0]:
                best = (budget, path, entered)
    if best is None:
        return None, first_name
    budget, path, entered = best
    return PhaseBudget(path, budget, now_s - max(0.0, now_wall - entered)), path

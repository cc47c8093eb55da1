"""HD104 process.busy_loop: CPU-bound with no sign of leaving: ~100% of a CPU in the same call
chain in every sample. A thread waiting for the GPU spins too (CUDA's synchronisation polls), but
it waits rather than computes: that is the GPU rules' to explain, not a loop's exit condition."""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass

from hangdoctor.analysis.activity import contended_share, runnable_throughout
from hangdoctor.analysis.device import device_wait, process_uses_gpu
from hangdoctor.analysis.frames import Origin, innermost_user_frame, origin, short_location
from hangdoctor.analysis.job import JobView, thread_label
from hangdoctor.evidence.model import (
    Frame,
    ProcessEvidence,
    ThreadEvidence,
)
from hangdoctor.i18n import _
from hangdoctor.rules.base import Rule
from hangdoctor.rules.confidence import Confidence
from hangdoctor.rules.finding import Finding, Severity
from hangdoctor.rules.helpers import at, culprit, frames_of
from hangdoctor.taxonomy import Category

_BUSY_SHARE = 0.8


def _signature(frames: tuple[Frame, ...]) -> tuple[tuple[str, str], ...]:
    """The call chain without line numbers: a loop moves between lines, not functions."""
    return tuple((f.file, f.function) for f in frames if not f.native)


def _loop_frame(stacks: Sequence[tuple[Frame, ...]]) -> Frame | None:
    """Where a thread that moves between calls keeps coming back: the deepest frame every
    sample shares (the same function, reached by the same lines above it), in the user's code,
    whose lines in every sample lie inside one loop; given at that loop's header. None when
    the samples share no such loop (a thread moving on through its work)."""
    chains = [tuple(reversed([f for f in stack if not f.native])) for stack in stacks]
    for depth in range(min(len(chain) for chain in chains)):
        here = [chain[depth] for chain in chains]
        if len({(f.file, f.function) for f in here}) != 1:
            return None
        if len({f.line for f in here}) == 1:
            continue  # the same line in every sample: the loop is deeper
        if origin(here[0]) is not Origin.USER:
            return None
        common = set(here[0].loop_lines).intersection(*(f.loop_lines for f in here[1:]))
        if not common:
            return None
        header = max(common)  # nested loops: the innermost starts last
        first = here[0]
        code = (
            first.loops[first.loop_lines.index(header)]
            if len(first.loops) == len(first.loop_lines)
            else None
        )
        return first.model_copy(update={"line": header, "code": code})
    return None


def _retries_in_a_while_loop(place: Frame | None) -> bool:
    """Whether the user's line that the spinning library call was made from lies in a `while`
    loop: a redraw or retry loop calling a short library function round and round (two samples
    of `random.randrange` may well land on one line of it), not one long call of a library's
    own. A `for` loop over data moves on; a `while` whose condition never changes does not."""
    if place is None or not place.loops or len(place.loops) != len(place.loop_lines):
        return False
    return place.loops[-1].lstrip().startswith("while")


def _progressed(job: JobView, pid: int) -> bool:
    """Whether the process took a step or a batch while it was sampled."""
    record = job.bundle.job
    if record is None or not job.bundle.snapshots:
        return False
    since = job.bundle.snapshots[0].wall_time
    return any(
        max(status.last_step_at or 0.0, status.last_batch_at or 0.0) >= since
        for status in record.progress
        if status.pid == pid
    )


# On a loaded machine a spinning thread shares its core: runnable (state R) in every snapshot
# and still using a good part of what one task can get there is spinning too.
_CONTENDED_SHARE = 0.3


@dataclass(frozen=True)
class Spin:
    """A thread that used a CPU throughout the samples without leaving its call chain, or its
    loop, and made no progress: where (`loop`, when it moved between lines of one), how much."""

    process: ProcessEvidence
    thread: ThreadEvidence
    stacks: tuple[tuple[Frame, ...], ...]
    share: float
    loop: Frame | None


def spinning_threads(job: JobView) -> Iterator[Spin]:
    """Every thread that spins: busy in every sample (or runnable throughout on a loaded
    machine), in one call chain or one loop of the user's, no step or batch meanwhile, and not
    in CUDA's synchronisation (waiting for the device)."""
    for process in job.processes:
        for thread in process.threads:
            share = job.thread_cpu_share(process.pid, thread.tid)
            if share is None or (
                share < _BUSY_SHARE
                and not (
                    share >= contended_share(job, _CONTENDED_SHARE)
                    and runnable_throughout(job, process.pid, thread.tid)
                )
            ):
                continue
            stacks = tuple(
                frames_of(sample)
                for _, sample in job.samples(process.pid, thread.tid)
                if sample.python is not None and sample.python.frames
            )
            if len(stacks) < 2:
                continue
            loop: Frame | None = None
            if len({_signature(s) for s in stacks}) != 1:
                loop = _loop_frame(stacks)
                if loop is None or _progressed(job, process.pid):
                    continue
            if device_wait(stacks[-1], gpu=process_uses_gpu(process)) is not None:
                continue  # spinning in CUDA's synchronisation: waiting for the device
            yield Spin(process, thread, stacks, share, loop)


class BusyLoop(Rule):
    """a thread spins on the CPU in the same code

    Fires when: a thread spins at ~100% CPU in the same call chain in every sample

    Why: A loop that polls a condition which never becomes true burns a CPU core forever and never
    moves on: a flag only another thread or process would set, a value that never changes, an exit
    test that is wrong. The job looks busy, so nothing times out, yet no step completes.

    Instead: Wait on an event instead of polling (`threading.Event.wait(timeout=...)`,
    `multiprocessing.Event`), and bound every polling loop with a deadline or a maximum number of
    iterations that raises when it is reached.
    """

    id = "HD104"
    category = Category.PROCESS_BUSY_LOOP
    reads = "capture"
    specificity = 40

    def check(self, job: JobView) -> Iterable[Finding]:
        for spin in spinning_threads(job):
            yield self._finding(job, spin)

    def _finding(self, job: JobView, spin: Spin) -> Finding:
        process, thread, stacks, share, loop = (
            spin.process,
            spin.thread,
            spin.stacks,
            spin.share,
            spin.loop,
        )
        frames = stacks[-1]
        place = loop or innermost_user_frame(frames)
        innermost = next((f for f in frames if not f.native), None)
        in_user_code = (
            loop is not None
            or (innermost is not None and origin(innermost) is Origin.USER)
            or _retries_in_a_while_loop(place)
        )
        lines = sorted({f.line for s in stacks for f in s[:1]})
        where = short_location(place) if place else _("its current line")
        how = (
            _(
                "Over {span:.1f} s the thread used {share:.0%} of a CPU and "
                "stayed in the same call chain in all {count} samples. A dump cannot see "
                "progress: if this code should have finished, it is looping without an exit.",
                span=job.sampled_span_s,
                share=share,
                count=len(stacks),
            )
            if loop is None
            else _(
                "Over {span:.1f} s the thread used {share:.0%} of a CPU, and in all {count} "
                "samples it was inside the loop at {where}, at different lines of it, with "
                "no step or batch done: the loop goes round without reaching its exit.",
                span=job.sampled_span_s,
                share=share,
                count=len(stacks),
                where=where,
            )
        )
        return self.finding(
            severity=Severity.ERROR if in_user_code else Severity.WARNING,
            confidence=Confidence.FAIR if in_user_code else Confidence.WEAK,
            title=_(
                "{thread} spins at {share:.0%} CPU in {where}",
                thread=thread_label(thread),
                share=share,
                where=where,
            ),
            explanation=how,
            culprit=culprit(job, process, thread, loop),
            evidence=(
                _(
                    "CPU {share:.0%} over {span:.1f} s in {count} samples, "
                    "innermost line(s) {lines}",
                    share=share,
                    span=job.sampled_span_s,
                    count=len(stacks),
                    lines=", ".join(map(str, lines)),
                ),
                _("innermost frame: {place}", place=at(innermost)),
            ),
            fixes=(
                _(
                    "Check the exit condition of the loop at {where}: what should make it true, "
                    "and can it ever become true (a flag set by another thread or process, a "
                    "value that never changes)?",
                    where=where,
                ),
                _(
                    "Wait on an event instead of polling (threading.Event.wait(timeout=...)) and "
                    "bound the loop with a deadline or a maximum number of iterations."
                ),
                _("Watch it live with `py-spy top --pid {pid}`.", pid=process.pid),
            ),
        )

"""HD113 process.blocked_io: two processes wait on pipes to each other. A parent reads its
child's output while the child reads its input to the end, whose write end the parent still
holds open (it never closed `proc.stdin`); or both write into pipes that are full because the
other is not reading. Each waits for the other, found as a cycle of pipe waits in the job's
wait-for graph."""

from __future__ import annotations

from collections.abc import Iterable

from hangdoctor.analysis.frames import blame_frame, short_location
from hangdoctor.analysis.job import JobView, thread_label
from hangdoctor.analysis.waitgraph import Sink, build_wait_graph
from hangdoctor.analysis.waits import WaitKind, describe_wait
from hangdoctor.evidence.model import ProcessEvidence, ThreadEvidence
from hangdoctor.i18n import _
from hangdoctor.rules.base import Rule
from hangdoctor.rules.confidence import Confidence
from hangdoctor.rules.finding import Finding
from hangdoctor.rules.helpers import at, culprit, frames_of, main_thread
from hangdoctor.taxonomy import Category

_PIPES = frozenset({WaitKind.PIPE_READ, WaitKind.PIPE_WRITE})


def _pipe_wait(job: JobView, process: ProcessEvidence, thread: ThreadEvidence) -> bool:
    return describe_wait(job, process, thread).kind in _PIPES


class PipeCycle(Rule):
    """two processes wait on pipes to each other: a parent and its child, each waiting

    Fires when: following pipe waits through the wait-for graph comes back to where it started: a
    process reads (or writes) a pipe whose other end is held by a process that is itself blocked on
    a pipe to the first (a child reading its stdin to EOF while the parent, which never closed that
    stdin, reads the child's stdout)

    Why: A child that reads its stdin to the end waits for end-of-file, which comes only when every
    write end is closed; a parent that still holds that end open while it reads the child's output
    waits for output the child writes only after end-of-file. Two processes that both write into
    full pipes (64 KiB) the other does not read wait the same way. Each waits for the other forever.

    Instead: Close the child's stdin as soon as the input is written (`proc.stdin.close()`) before
    reading its output, or use `proc.communicate(input, timeout=...)`, which writes, closes and
    reads at once; for a line-by-line conversation, flush after each line and have the child answer
    each line.
    """

    id = "HD113"
    category = Category.PROCESS_BLOCKED_IO
    reads = "capture"
    specificity = 85

    def check(self, job: JobView) -> Iterable[Finding]:
        graph = build_wait_graph(job)
        for process in job.processes:
            thread = main_thread(process)
            if thread is None or not _pipe_wait(job, process, thread):
                continue
            chain = graph.follow((process.pid, thread.tid))
            if chain.sink is not Sink.CYCLE or len(chain.parties) < 2:
                continue
            parties = [
                (p, t)
                for pid, tid in chain.parties
                if (p := job.process(pid)) is not None and (t := job.thread(pid, tid)) is not None
            ]
            if len({p.pid for p, _ in parties}) < 2 or not all(
                _pipe_wait(job, p, t) for p, t in parties
            ):
                continue
            yield self._finding(job, parties)
            return

    def _finding(
        self, job: JobView, parties: list[tuple[ProcessEvidence, ThreadEvidence]]
    ) -> Finding:
        pids = {p.pid for p, _ in parties}
        # The parent of the others (it made the pipes) is where the code must change.
        lead = next(((p, t) for p, t in parties if p.ppid not in pids), parties[0])
        process, thread = lead
        frame = blame_frame(frames_of(thread))
        where = short_location(frame) if frame is not None else _("its pipe wait")
        evidence = [
            _(
                "{process}, {thread}: {wait}, at {place}",
                process=job.describe_process(p.pid),
                thread=thread_label(t),
                wait=describe_wait(job, p, t).summary,
                place=at(blame_frame(frames_of(t))),
            )
            for p, t in parties
        ]
        reads = describe_wait(job, process, thread).kind is WaitKind.PIPE_READ
        return self.finding(
            confidence=Confidence.STRONG,
            title=_(
                "Pipe deadlock: {process} waits on a pipe at {where}, and the process at its "
                "other end waits on a pipe back to it",
                process=job.describe_process(process.pid),
                where=where,
            ),
            explanation=_(
                "Each of these processes waits for the other through a pipe. "
                "A child that reads its input to the end waits for end-of-file, which "
                "comes only when every write end is closed; the parent still holds the "
                "child's stdin open while it reads the child's output, which the child "
                "will write only after that end-of-file."
            )
            if reads
            else _(
                "Each of these processes waits for the other through a pipe. "
                "Both write into pipes the other does not read: each pipe is full (64 KiB) "
                "and each writer waits for the other to read."
            ),
            culprit=culprit(job, process, thread, frame),
            related=tuple(culprit(job, p, t) for p, t in parties if p is not process),
            evidence=tuple(evidence),
            fixes=(
                _(
                    "Close the child's stdin when the input is written (`proc.stdin.close()`) "
                    "before reading its output, or use `proc.communicate(input)`, which writes, "
                    "closes and reads at once."
                ),
                _(
                    "For a conversation (write a line, read a line), flush after each line and make "
                    "the child answer each line instead of reading to the end first."
                ),
            ),
        )

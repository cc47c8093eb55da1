"""HD117 process.deadlock (or the category its sink decides): following the job's wait-for
graph ends at a wait that nothing in the job can end (no thread or process is left that could)
or at a cycle of waits. The sink decides (issue 27): whatever the primitive is called, the
mechanism is a wait for no one, and the culprit is where the chain stops; rules that know the
primitive name it more precisely.

Its category comes from the sink table (`analysis.sink_category`): a deadlock when the last
wait of the chain is on a lock, event, queue or join; blocked I/O when it goes through a pipe,
FIFO or socket; a data stall when the training loop's input is what waits."""

from __future__ import annotations

from collections.abc import Iterable

from hangdoctor.analysis.frames import innermost_user_frame, short_location
from hangdoctor.analysis.job import JobView, thread_label
from hangdoctor.analysis.sink_category import sink_category
from hangdoctor.analysis.waitgraph import Sink, build_wait_graph, serves_a_call
from hangdoctor.analysis.waits import describe_wait
from hangdoctor.i18n import _
from hangdoctor.rules.base import Rule
from hangdoctor.rules.confidence import Confidence
from hangdoctor.rules.finding import Finding, Severity
from hangdoctor.rules.helpers import at, culprit, frames_of
from hangdoctor.taxonomy import Category


class NoOneLeft(Rule):
    """a wait that nothing left in the job can end, or a cycle of waits

    Fires when: the job hung and following its wait-for graph from a waiting thread ends at a wait
    that no thread or process of the job is left to end, or comes back to a thread already on the
    chain; names where the chain stops

    Why: A wait without a timeout ends only when some other party acts. When the graph of who could
    act shows nobody (the provider was never started, or already ended), or each party waits for the
    next and the last for the first, the wait can never end, whatever the primitive is called.

    Instead: Make sure the party that ends the wait exists and cannot block on the waiter: start it
    before waiting, release what it needs first; give the wait a timeout that raises.
    """

    id = "HD117"
    category = Category.PROCESS_DEADLOCK
    reads = "capture"
    specificity = 40

    def check(self, job: JobView) -> Iterable[Finding]:
        record = job.record
        if record is None or record.hang_declared_s is None:
            return
        graph = build_wait_graph(job)
        named: set[tuple[int, int]] = set()
        for party in list(graph.waits):
            chain = graph.follow(party)
            if chain.sink not in (Sink.NOBODY, Sink.CYCLE) or chain.end in named:
                continue
            process, thread = job.process(chain.end[0]), job.thread(*chain.end)
            if process is None or thread is None or process.outside_job:
                continue
            sink_process, sink_thread = process, thread  # the one that waits for no one
            frame = innermost_user_frame(frames_of(thread))
            if (
                frame is None
                and (serves_a_call(thread) or not frames_of(thread))
                and len(chain.parties) > 1
            ):
                # A Manager's server runs the call for its client, a runtime's native thread
                # (tf.data reading its source) the work its Python caller asked for: the user's
                # line is the caller's, one step back on the chain.
                process, thread = job.process(chain.parties[-2][0]), job.thread(*chain.parties[-2])
                if process is None or thread is None:
                    continue
                frame = innermost_user_frame(frames_of(thread))
            if frame is None:
                continue  # a framework's own loop (Ray's worker): not where the user can look
            named.add(chain.end)
            wait = describe_wait(job, process, thread)
            sink_wait = describe_wait(job, sink_process, sink_thread)
            on_chain = [
                (p, t)
                for step in chain.parties[:-1]
                if (p := job.process(step[0])) is not None and (t := job.thread(*step)) is not None
            ]
            yield Finding(
                id=self.id,
                category=sink_category(job, party) or self.category,
                severity=Severity.ERROR,
                confidence=Confidence.PLAUSIBLE,
                title=(
                    _(
                        "Waits for no one at {where}: {reason}",
                        where=short_location(frame),
                        reason=chain.reason,
                    )
                    if chain.sink is Sink.NOBODY
                    else _(
                        "A cycle of waits closes at {where}: {reason}",
                        where=short_location(frame),
                        reason=chain.reason,
                    )
                ),
                explanation=_(
                    "Following each wait to whoever could end it leads to {thread} of "
                    "{process} ({wait}), and {reason}. Nothing will change that: the job "
                    "waits forever.",
                    thread=thread_label(sink_thread),
                    process=job.describe_process(sink_process.pid),
                    wait=sink_wait.summary,
                    reason=chain.reason,
                ),
                culprit=culprit(job, process, thread, frame),
                related=tuple(culprit(job, p, t) for p, t in on_chain[:3]),
                evidence=(
                    *(
                        _(
                            "{waiter} waits for {waited}, which {why}",
                            waiter=_label(job, e.waiter),
                            waited=_label(job, e.waited),
                            why=e.why,
                        )
                        for e in chain.edges
                    ),
                    _(
                        "{thread} of {process} waits at {place}: {wait}",
                        thread=thread_label(thread),
                        process=job.describe_process(process.pid),
                        place=at(frame),
                        wait=wait.summary,
                    ),
                ),
                fixes=(
                    _(
                        "Look at who should end the wait at {where}: start it before waiting, "
                        "or keep it from waiting on this thread; give the wait a timeout that "
                        "raises.",
                        where=short_location(frame),
                    ),
                ),
            )


def _label(job: JobView, party: tuple[int, int]) -> str:
    thread = job.thread(*party)
    name = thread_label(thread) if thread is not None else _("thread {tid}", tid=party[1])
    return _("{thread} of {process}", thread=name, process=job.describe_process(party[0]))

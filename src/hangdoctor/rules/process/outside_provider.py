"""HD116 process.blocked_io: the wait-for graph ends at a process outside the job's tree that
holds the other end of what a job thread waits on: a server a child shell started with `&`, a
daemon that double-forked, a helper another session started.

The capture looks for such processes (the other holders of the pipe, FIFO or loopback
connection a job thread is blocked on), so the report names the process that holds the wait,
with its command line and its own line (issue 27).
"""

from __future__ import annotations

from collections.abc import Iterable

from hangdoctor.analysis.frames import blame_frame, innermost_user_frame, short_location
from hangdoctor.analysis.job import JobView, thread_label
from hangdoctor.analysis.waitgraph import build_wait_graph
from hangdoctor.analysis.waits import describe_wait
from hangdoctor.i18n import _
from hangdoctor.rules.base import Rule
from hangdoctor.rules.confidence import Confidence
from hangdoctor.rules.finding import Finding
from hangdoctor.rules.helpers import at, culprit, frames_of, main_thread
from hangdoctor.taxonomy import Category


class OutsideProvider(Rule):
    """a job thread waits on a process outside the job's tree

    Fires when: following the job's wait-for graph from a waiting thread ends at a process that is
    no descendant of the job's root (an orphan the job left, a daemon) and holds the other end of
    the pipe, FIFO or connection waited on; names that process and its line

    Why: A pipe's reader sees end-of-file only when every holder of the write end has closed it, and
    a connection's reader waits for whoever holds the other socket. A process that a job's child
    started in the background inherits those descriptors and outlives the child: the job then waits
    for it, though it is no part of the job's tree.

    Instead: Start background processes with their standard streams redirected
    (`stdout=subprocess.DEVNULL`, `> /dev/null 2>&1 &` in a shell) or with `close_fds`, and end them
    when the job ends; read with a timeout.
    """

    id = "HD116"
    category = Category.PROCESS_BLOCKED_IO
    reads = "capture"
    specificity = 91

    def check(self, job: JobView) -> Iterable[Finding]:
        graph = build_wait_graph(job)
        named: set[int] = set()
        for party in list(graph.waits):
            chain = graph.follow(party)
            holder = job.process(chain.end[0])
            waiter_process, waiter = job.process(party[0]), job.thread(*party)
            if holder is None or not holder.outside_job or holder.pid in named:
                continue
            if waiter_process is None or waiter is None or waiter_process.outside_job:
                continue
            frame = blame_frame(frames_of(waiter))
            if frame is None:
                continue
            named.add(holder.pid)
            held = job.thread(*chain.end) or main_thread(holder)
            held_at = innermost_user_frame(frames_of(held)) if held is not None else None
            command = " ".join(holder.cmdline) or holder.name or "?"
            wait = describe_wait(job, waiter_process, waiter)
            yield self.finding(
                confidence=Confidence.CERTAIN,
                title=_(
                    "Waits at {waits} on {holder}: `{command}` holds the other end and does "
                    "not answer",
                    waits=short_location(frame),
                    holder=job.describe_process(holder.pid),
                    command=command[:120],
                ),
                explanation=_(
                    "{waiter} waits ({wait}) for the other end, and the process that holds "
                    "it is not part of the job's tree: it was left running (started in the "
                    "background, or double-forked) and inherited the descriptor. Until it "
                    "closes it or answers, the wait cannot end.",
                    waiter=thread_label(waiter),
                    wait=wait.summary,
                ),
                # The holder's own line when it runs the user's Python, else the user's line
                # that waits on it (a `tail` or a server binary has none of the user's code).
                culprit=(
                    culprit(job, holder, held, held_at)
                    if held_at is not None
                    else culprit(job, waiter_process, waiter, frame)
                ),
                related=(
                    (culprit(job, waiter_process, waiter, frame),)
                    if held_at is not None
                    else (culprit(job, holder, held),)
                ),
                evidence=(
                    _(
                        "{thread} of {process} waits at {place}: {wait}",
                        thread=thread_label(waiter),
                        process=job.describe_process(waiter_process.pid),
                        place=at(frame),
                        wait=wait.summary,
                    ),
                    _(
                        "{holder}: `{command}`, parent pid {ppid}, state {state}, at {place}",
                        holder=job.describe_process(holder.pid),
                        command=command[:200],
                        ppid=holder.ppid,
                        state=holder.state or "?",
                        place=at(held_at),
                    ),
                ),
                fixes=(
                    _(
                        "End or redirect the process that holds the other end (pid {pid}): "
                        "start it with its output redirected (`> /dev/null 2>&1 &`, "
                        "`stdout=subprocess.DEVNULL`) or `close_fds=True`, and stop it when "
                        "the job ends.",
                        pid=holder.pid,
                    ),
                    _(
                        "Give the wait at {waits} a timeout.",
                        waits=short_location(frame),
                    ),
                ),
            )

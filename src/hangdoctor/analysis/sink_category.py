"""The category that the sink of a wait decides (issue 27), kept beside the taxonomy.

Following a stuck thread's waits to whoever could end them stops at a sink. Where the sink is
certain (the provider is dead, or no one is left who could end the wait), it settles the
category among the generic ones by what the last wait of the chain went through, whatever the
rule that noticed it: a lock whose holder died and an `Event` no thread is left to set are the
same mechanism, and so are a `multiprocessing.Queue` and an `os.pipe` whose writer is gone.

| sink | the last wait goes through | category |
| --- | --- | --- |
| dead, nobody | a lock, event, condition, queue, semaphore, barrier, join, file lock | process.deadlock |
| dead, nobody | a pipe, FIFO or socket (multiprocessing's queues and pipes included) | process.blocked_io |
| dead | a DataLoader's fetch, none of its workers left | data.worker_killed |
| dead, nobody | anything, waited for by the training loop's input (a DataLoader, an iterator a `for` loop reads, a tf.data pipeline's generator, a JAX host callback taking the step's values from a queue), anywhere on the chain | data.pipeline_stall |

Users name a wait through a pipe by the pipe ("recv() hangs", "open() of a FIFO blocks"), and
a wait on a lock by the lock, which is why the medium splits the first two rows. Rules of other
families (a collective, the device, a framework's loader) name a mechanism on top of the sink and
are not overruled; among the generic categories, a finding that contradicts the sink ranks after
one that agrees. Cycles and outside peers are left to the rules: a peer outside the job may be a
person, a server or the device.
"""

from __future__ import annotations

from collections.abc import Iterable

from hangdoctor.analysis.frames import Origin, in_function, origin, python_frames
from hangdoctor.analysis.job import JobView
from hangdoctor.analysis.thread_waits import blocking_call, shared_call, waits_in_iterator
from hangdoctor.analysis.waitgraph import Party, Sink, WaitGraph, build_wait_graph
from hangdoctor.analysis.waits import Wait, WaitKind
from hangdoctor.evidence.model import ThreadEvidence
from hangdoctor.taxonomy import Category

#: The sinks that decide a category.
DECIDING = frozenset({Sink.DEAD, Sink.NOBODY})

#: Waits through a medium (a pipe, FIFO or socket): blocked I/O when no one is left to answer.
THROUGH_A_MEDIUM = frozenset(
    {
        WaitKind.PIPE_READ,
        WaitKind.PIPE_WRITE,
        WaitKind.SOCKET_READ,
        WaitKind.SOCKET_WRITE,
        WaitKind.CONNECT,
        WaitKind.ACCEPT,
        WaitKind.POLL,
        WaitKind.FILE_IO,
    }
)

#: The categories a sink settles: those that name the medium of a wait, or nothing.
GENERIC = frozenset(
    {
        Category.PROCESS_DEADLOCK,
        Category.PROCESS_BLOCKED_IO,
        Category.PROCESS_UNEXPLAINED,
        Category.DATA_PIPELINE_STALL,
    }
)

#: The input pipelines' own machinery: a thread inside one waits for the training loop's input
#: (a DataLoader's fetch; tf.data running a generator or a `py_function`; Keras's data adapters).
_DATA_FILES = ("torch/utils/data/", "tensorflow/python/data/", "keras/src/trainers/data_adapters/")


#: Where JAX runs a host callback whose results flow into the jitted step (`io_callback`,
#: `pure_callback`; `jax.debug.callback` returns nothing): one that takes them from a queue
#: waits for the step's input (one that waits on a lock is a deadlock, whatever it computes).
_JAX_CALLBACKS = ("jax/_src/callback.py", {"io_callback_impl", "pure_callback_impl"})


def _takes_from_a_queue(thread: ThreadEvidence) -> bool:
    """Whether the thread's own code waits in a queue's get() (threading or multiprocessing)."""
    found = blocking_call(thread) or shared_call(thread)
    return found is not None and found[0].function.split(".")[-1] == "get"


def on_data_path(thread: ThreadEvidence) -> bool:
    """Whether the thread waits for the training loop's input: inside a DataLoader, in a JAX
    host callback that feeds the jitted step its values, or in a blocking call made on behalf
    of an iterator a `for` loop reads (a prefetching loader)."""
    frames = python_frames(thread.python.frames if thread.python else ())
    if any(any(part in f.file.replace("\\", "/") for part in _DATA_FILES) for f in frames):
        return True
    if in_function(frames, *_JAX_CALLBACKS) and _takes_from_a_queue(thread):
        return True
    first_user = next((i for i, f in enumerate(frames) if origin(f) is Origin.USER), None)
    if not first_user:  # None, or the thread waits in the user's own frame
        return False
    return waits_in_iterator(thread, frames[first_user - 1])


def sink_category(job: JobView, party: Party) -> Category | None:
    """The category the sink of `party`'s chain of waits decides, or None where it decides
    nothing (no wait, or a sink the table leaves to the rules)."""
    graph = build_wait_graph(job)
    if party not in graph.waits:
        return None
    chain = graph.follow(party)
    if chain.sink not in DECIDING:
        return None
    if chain.sink is Sink.DEAD and chain.end in graph.dead_loader_workers:
        return Category.DATA_WORKER_KILLED
    if any((t := job.thread(*p)) is not None and on_data_path(t) for p in chain.parties):
        return Category.DATA_PIPELINE_STALL
    last = _last_wait(graph, chain.end)
    if last is not None and last.kind in THROUGH_A_MEDIUM:
        return Category.PROCESS_BLOCKED_IO
    return Category.PROCESS_DEADLOCK


def _last_wait(graph: WaitGraph, end: Party) -> Wait | None:
    """The wait the chain ends on. Where the end waits for a dead provider only through
    threads that merely could end its wait (anyone may open a FIFO), and every one of those
    waits for the dead too, the last wait is theirs: a FIFO whose writer waits on an `Event`
    that a dead thread should have set is stuck on the event."""
    wait = graph.waits.get(end)
    if end not in graph.dead:
        return wait
    wakers = {e.waited for e in graph.edges.get(end, ()) if not e.certain}
    if not wakers or not all(w in graph.dead for w in wakers):
        return wait
    theirs = [graph.waits[w] for w in sorted(wakers) if w in graph.waits]
    if theirs and all(w.kind not in THROUGH_A_MEDIUM for w in theirs):
        return theirs[0]
    return wait


def contradicts_sink(job: JobView, category: Category, parties: Iterable[Party]) -> bool:
    """Whether a finding of `category` about these parties (its culprit first) contradicts the
    category that the first of them with a deciding sink has."""
    if category not in GENERIC:
        return False
    for party in parties:
        decided = sink_category(job, party)
        if decided is not None:
            return decided is not category
    return False

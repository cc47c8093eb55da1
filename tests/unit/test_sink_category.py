"""The category a wait's sink decides (issue 27): the table in `analysis.sink_category`, the
waits it rests on (a pipe only the waiter holds, a socket pair, a FIFO being opened, standard
input fed from outside), and the ranking that puts a contradicting generic finding second."""

from __future__ import annotations

from hangdoctor.analysis.job import JobView
from hangdoctor.analysis.sink_category import contradicts_sink, sink_category
from hangdoctor.analysis.waitgraph import Sink, build_wait_graph
from hangdoctor.evidence import build as b
from hangdoctor.evidence.model import (
    Frame,
    JobRecord,
    ProcessEvidence,
    SocketEndpoint,
    ThreadEvidence,
)
from hangdoctor.probes.sockets import unix_peers
from hangdoctor.taxonomy import Category

MP = f"{b.STDLIB}/multiprocessing"
THREADING = f"{b.STDLIB}/threading.py"


def _reads(fd: int, *outer: Frame, syscall: str = "read") -> ThreadEvidence:
    return b.thread(
        10,
        b.frame(f"{MP}/connection.py", 395, "Connection._recv"),
        b.frame(f"{MP}/queues.py", 103, "Queue.get", local_vars={"timeout": ("None", None)}),
        *outer,
        name="MainThread",
        syscall=syscall,
        args=(fd, 0, 4),
    )


def _main_reads_own_pipe(*outer: Frame) -> JobView:
    frames = outer or (b.frame("prep.py", 40, "main", code="item = out.get()"),)
    reader = _reads(3, *frames)
    return JobView(
        b.bundle(b.process(10, reader, files={3: ("pipe:[70]", "r"), 4: ("pipe:[70]", "w")}))
    )


def test_a_pipe_only_its_reader_holds_is_blocked_io_for_no_one():
    job = _main_reads_own_pipe()
    assert build_wait_graph(job).follow((10, 10)).sink is Sink.NOBODY
    assert sink_category(job, (10, 10)) is Category.PROCESS_BLOCKED_IO


def test_the_same_wait_read_by_a_for_loop_is_the_training_loops_input():
    job = _main_reads_own_pipe(
        b.frame("loader.py", 12, "Prefetcher.__next__", code="return self.out.get()"),
        b.frame("train.py", 30, "main", code="for batch in loader:"),
    )
    assert sink_category(job, (10, 10)) is Category.DATA_PIPELINE_STALL


def _gets_from_queue() -> ThreadEvidence:
    """The main thread in `queue.Queue.get()` without a timeout."""
    return b.thread(
        10,
        b.frame(THREADING, 327, "Condition.wait", local_vars={"timeout": ("None", None)}),
        b.frame(f"{b.STDLIB}/queue.py", 171, "Queue.get", local_vars={"timeout": ("None", None)}),
        b.frame("train.py", 30, "main", code="batch = batches.get()"),
        name="MainThread",
        syscall="futex",
    )


def test_a_lock_nobody_can_release_is_a_deadlock():
    job = JobView(b.bundle(b.process(10, _gets_from_queue())))
    assert sink_category(job, (10, 10)) is Category.PROCESS_DEADLOCK
    assert contradicts_sink(job, Category.PROCESS_BLOCKED_IO, [(10, 10)])
    assert not contradicts_sink(job, Category.PROCESS_DEADLOCK, [(10, 10)])
    # Categories outside the generic ones name a mechanism on top of the sink.
    assert not contradicts_sink(job, Category.DISTRIBUTED_COLLECTIVE_MISMATCH, [(10, 10)])


def test_standard_input_fed_from_outside_the_capture_is_an_outside_wait():
    prompt = b.thread(
        10,
        b.frame("train.py", 26, "confirm", code='answer = input("continue? ")'),
        name="MainThread",
        syscall="read",
        args=(0, 0, 1),
    )
    job = JobView(b.bundle(b.process(10, prompt, files={0: ("pipe:[55]", "r")})))
    chain = build_wait_graph(job).follow((10, 10))
    assert chain.sink is Sink.OUTSIDE
    assert "standard input" in chain.reason
    assert sink_category(job, (10, 10)) is None


def _pair_reader(peer_holder_pid: int | None) -> JobView:
    reader = _reads(3, b.frame("prep.py", 40, "main", code="item = conn.recv()"))
    files = {3: ("socket:[800]", "rw")}
    if peer_holder_pid == 10:
        files[4] = ("socket:[801]", "rw")
    processes = [b.process(10, reader, files=files)]
    if peer_holder_pid == 11:
        sender = b.thread(11, b.frame("prep.py", 20, "produce", code="rows = load()"), state="R")
        processes.append(b.process(11, sender, ppid=10, files={5: ("socket:[801]", "rw")}))
    sockets = [SocketEndpoint(inode=800, protocol="unix", peer=801)]
    return JobView(b.bundle(*processes, sockets=sockets))


def test_a_socket_pair_whose_peer_its_own_process_holds_waits_for_no_one():
    job = _pair_reader(10)
    chain = build_wait_graph(job).follow((10, 10))
    assert chain.sink is Sink.NOBODY
    assert sink_category(job, (10, 10)) is Category.PROCESS_BLOCKED_IO


def test_a_socket_pair_waits_for_the_process_holding_its_peer():
    chain = build_wait_graph(_pair_reader(11)).follow((10, 10))
    assert chain.parties == ((10, 10), (11, 11))
    assert chain.edges[0].why == "holds the other end of the socket pair"


def test_a_socket_pair_whose_peer_no_captured_process_holds_waits_outside():
    assert build_wait_graph(_pair_reader(None)).follow((10, 10)).sink is Sink.OUTSIDE


def _opens_fifo(*others: ProcessEvidence) -> JobView:
    opener = b.thread(
        10,
        b.frame("publish.py", 43, "sha256_of", code='with open(path, "rb") as handle:'),
        name="MainThread",
        syscall="openat",
        wchan="wait_for_partner",
    )
    return JobView(b.bundle(b.process(10, opener), *others))


def test_opening_a_fifo_with_no_one_left_to_open_its_other_end_waits_for_no_one():
    job = _opens_fifo()
    chain = build_wait_graph(job).follow((10, 10))
    assert chain.sink is Sink.NOBODY
    assert "FIFO" in chain.reason
    assert sink_category(job, (10, 10)) is Category.PROCESS_BLOCKED_IO


def test_opening_a_fifo_while_another_process_runs_user_code_may_still_end():
    writer = b.thread(
        11, b.frame("events.py", 9, "emit", code="time.sleep(1)"), syscall="nanosleep"
    )
    chain = build_wait_graph(_opens_fifo(b.process(11, writer, ppid=10))).follow((10, 10))
    assert chain.sink is Sink.MAYBE
    assert "open the FIFO's other end" in chain.reason


def _fifo_writer(*, waits_on_event: bool) -> ProcessEvidence:
    """The process that would open the FIFO: stuck on a `multiprocessing.Event`, or running."""
    if not waits_on_event:
        return b.process(11, b.thread(11, b.frame("feed.py", 9, "provider")), ppid=10)
    waiting = b.thread(
        11,
        b.frame(f"{MP}/synchronize.py", 356, "Event.wait", local_vars={"timeout": ("None", None)}),
        b.frame("feed.py", 9, "provider", code="READY.wait()"),
        name="MainThread",
        syscall="futex",
    )
    return b.process(11, waiting, ppid=10)


def test_a_fifo_whose_only_opener_waits_for_the_dead_is_a_deadlock():
    """The FIFO's writer would open it once an event is set, and the one that should set it
    is gone: the chain ends on the event, not on the FIFO."""
    died = (
        "Process Process-1:",
        "Traceback (most recent call last):",
        f'  File "{MP}/process.py", line 314, in _bootstrap',
        "    self.run()",
        f'  File "{MP}/process.py", line 108, in run',
        "    self._target(*self._args, **self._kwargs)",
        '  File "/job/feed.py", line 13, in prepare',
        '    raise KeyError("label")',
        "KeyError: 'label'",
    )
    job = _opens_fifo(_fifo_writer(waits_on_event=True))
    job = JobView(
        job.bundle.model_copy(update={"job": JobRecord(started_at=0.0, output_tail=died)})
    )
    assert build_wait_graph(job).follow((10, 10)).sink is Sink.DEAD
    assert sink_category(job, (10, 10)) is Category.PROCESS_DEADLOCK


def test_a_fifo_whose_opener_died_itself_stays_blocked_io():
    dead = b.process(12, ppid=10).model_copy(update={"state": "Z"})
    job = _opens_fifo(dead)
    assert sink_category(job, (10, 10)) is Category.PROCESS_BLOCKED_IO


def test_ss_listing_gives_each_connected_unix_socket_its_peer():
    listing = (
        "u_str ESTAB 0      0      * 280738 * 280739\n"
        "u_str ESTAB 0      0      /run/app.sock 5100 * 5101\n"
        "u_str LISTEN 0     128    /run/app.sock 5000 * 0\n"
        "garbage\n"
    )
    assert unix_peers(listing) == {280738: 280739, 5100: 5101}


def _queue_waiter_beside(helper: ThreadEvidence) -> JobView:
    return JobView(b.bundle(b.process(10, _gets_from_queue(), helper)))


def test_an_idle_feeder_thread_cannot_end_a_wait_on_a_queue_of_the_job():
    """A multiprocessing queue's feeder thread, asleep until a thread of the job puts an item,
    acts on no queue of its own accord."""
    feeder = b.thread(
        11,
        b.frame(THREADING, 327, "Condition.wait", local_vars={"timeout": ("None", None)}),
        b.frame(f"{MP}/queues.py", 231, "Queue._feed"),
        b.frame(THREADING, 982, "Thread.run"),
        syscall="futex",
    )
    job = _queue_waiter_beside(feeder)
    assert build_wait_graph(job).follow((10, 10)).sink is Sink.NOBODY
    assert sink_category(job, (10, 10)) is Category.PROCESS_DEADLOCK


def test_a_library_thread_waiting_for_a_connection_may_still_end_it():
    server = b.thread(
        11,
        b.frame(f"{b.STDLIB}/selectors.py", 415, "_PollLikeSelector.select"),
        b.frame(f"{b.STDLIB}/socketserver.py", 233, "BaseServer.serve_forever"),
        b.frame(THREADING, 982, "Thread.run"),
        syscall="poll",
    )
    assert build_wait_graph(_queue_waiter_beside(server)).follow((10, 10)).sink is Sink.MAYBE


def test_a_library_thread_asleep_with_a_timeout_may_still_end_it():
    timer = b.thread(
        11,
        b.frame(THREADING, 331, "Condition.wait", local_vars={"timeout": ("5.0", None)}),
        b.frame(THREADING, 629, "Event.wait", local_vars={"timeout": ("5.0", None)}),
        b.frame(THREADING, 1390, "Timer.run"),
        syscall="futex",
    )
    assert build_wait_graph(_queue_waiter_beside(timer)).follow((10, 10)).sink is Sink.MAYBE

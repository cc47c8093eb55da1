"""The job's wait-for graph: who could end each wait, and where the chain of waits stops; and
the culprit moved out of library code into the user's own line."""

from __future__ import annotations

from hangdoctor.analysis.frames import innermost_user_frame
from hangdoctor.analysis.job import JobView
from hangdoctor.analysis.sink_category import sink_category
from hangdoctor.analysis.waitgraph import Sink, build_wait_graph
from hangdoctor.evidence import build as b
from hangdoctor.evidence.model import AsyncTask, Bundle, ThreadEvidence
from hangdoctor.rules.finding import Culprit, Finding, Location, Severity
from hangdoctor.rules.user_code import in_user_code
from hangdoctor.taxonomy import Category

THREADING = f"{b.STDLIB}/threading.py"


def _joins(tid: int, joined: int, line: int = 80) -> ThreadEvidence:
    return b.thread(
        tid,
        b.frame(
            THREADING,
            1139,
            "Thread._wait_for_tstate_lock",
            local_vars={"self": ("<Thread>", joined)},
        ),
        b.frame(THREADING, 1119, "Thread.join", local_vars={"self": ("<Thread>", joined)}),
        b.frame("train.py", line, "main", code="prefetcher.join()"),
        name="MainThread",
        syscall="futex",
    )


def _puts_into_full_queue(tid: int, thread_object: int) -> ThreadEvidence:
    return b.thread(
        tid,
        b.frame(THREADING, 331, "Condition.wait", local_vars={"timeout": ("None", None)}),
        b.frame(
            f"{b.STDLIB}/queue.py",
            140,
            "Queue.put",
            local_vars={"block": ("True", None), "timeout": ("None", None)},
        ),
        b.frame("loader.py", 22, "Prefetcher.run", code="self.queue.put(batch)"),
        b.frame(
            THREADING,
            1045,
            "Thread._bootstrap_inner",
            local_vars={"self": ("<Prefetcher>", thread_object)},
        ),
        name="prefetch",
        syscall="futex",
    )


def test_a_join_leads_to_the_joined_thread_whose_full_queue_nobody_can_drain():
    job = JobView(b.bundle(b.process(10, _joins(10, 900), _puts_into_full_queue(11, 900))))
    chain = build_wait_graph(job).follow((10, 10))
    assert chain.parties == ((10, 10), (10, 11))
    assert chain.edges[0].why == "is the thread it joins"
    assert chain.sink is Sink.NOBODY
    assert "take an item out of the queue" in chain.reason


def test_a_thread_that_could_still_fill_the_queue_is_only_a_possible_waker():
    getter = b.thread(
        20,
        b.frame(THREADING, 327, "Condition.wait", local_vars={"timeout": ("None", None)}),
        b.frame(
            f"{b.STDLIB}/queue.py",
            171,
            "Queue.get",
            local_vars={"block": ("True", None), "timeout": ("None", None)},
        ),
        b.frame("train.py", 30, "main", code="batch = batches.get()"),
        name="MainThread",
        syscall="futex",
    )
    producer = b.thread(
        21,
        b.frame("loader.py", 12, "produce", code="time.sleep(1)"),
        name="producer",
        syscall="clock_nanosleep",
    )
    job = JobView(b.bundle(b.process(20, getter, producer)))
    chain = build_wait_graph(job).follow((20, 20))
    assert chain.parties == ((20, 20),)  # not followed to the sleeping thread
    assert chain.sink is Sink.MAYBE


def test_a_lock_cycle_between_two_threads_is_a_cycle():
    first = b.thread(
        30,
        b.frame(
            "train.py", 10, "save", code="with b_lock:", held=[("a_lock", 9)], acquiring=["b_lock"]
        ),
        name="MainThread",
        syscall="futex",
    )
    second = b.thread(
        31,
        b.frame(
            "train.py",
            20,
            "flush",
            code="with a_lock:",
            held=[("b_lock", 19)],
            acquiring=["a_lock"],
        ),
        name="ckpt",
        syscall="futex",
    )
    chain = build_wait_graph(JobView(b.bundle(b.process(30, first, second)))).follow((30, 30))
    assert chain.sink is Sink.CYCLE
    assert {e.why for e in chain.edges} == {"holds b_lock", "holds a_lock"}


def test_a_parent_waiting_for_its_child_leads_into_the_child():
    parent = b.thread(
        40,
        b.frame(f"{b.STDLIB}/subprocess.py", 2011, "Popen._wait"),
        b.frame("train.py", 50, "export", code="proc.wait()"),
        name="MainThread",
        syscall="wait4",
        args=(41,),
    )
    child = b.thread(
        41,
        b.frame("tool.py", 5, "main", code="data = sys.stdin.read()"),
        name="MainThread",
        syscall="read",
        args=(0,),
    )
    job = JobView(
        b.bundle(
            b.process(40, parent, files={5: ("pipe:[77]", "w")}),
            b.process(41, child, ppid=40, files={0: ("pipe:[77]", "r")}),
        )
    )
    chain = build_wait_graph(job).follow((40, 40))
    assert chain.parties == ((40, 40), (41, 41))
    assert chain.edges[0].why == "is the child process it waits for"
    # the child reads a pipe whose write end only its (waiting) parent holds
    assert build_wait_graph(job).follow((41, 41)).parties[-1] == (40, 40) or chain.sink in (
        Sink.NOBODY,
        Sink.CYCLE,
    )


def _finding(culprit: Culprit, *related: Culprit) -> Finding:
    return Finding(
        id="HD000",
        category=Category.PROCESS_DEADLOCK,
        severity=Severity.ERROR,
        confidence=0.5,
        title="t",
        culprit=culprit,
        related=related,
    )


def test_a_culprit_in_the_standard_library_moves_to_the_users_line_that_called_it():
    handler = b.thread(
        50,
        b.frame(THREADING, 1139, "Thread._wait_for_tstate_lock"),
        b.frame(f"{b.STDLIB}/concurrent/futures/thread.py", 235, "ThreadPoolExecutor.shutdown"),
        b.frame("train.py", 41, "on_sigterm", code="pool.shutdown(wait=True)"),
        b.frame("train.py", 90, "main", code="loss = step(batch)"),
        name="MainThread",
        syscall="futex",
    )
    job = JobView(b.bundle(b.process(50, handler)))
    library = Location(
        file=f"{b.STDLIB}/concurrent/futures/thread.py",
        line=235,
        function="ThreadPoolExecutor.shutdown",
    )
    moved = in_user_code(job, _finding(Culprit(pid=50, tid=50, location=library)))
    assert moved.culprit is not None and moved.culprit.location is not None
    assert moved.culprit.location.line == 41 and moved.culprit.location.user_code
    assert moved.culprit.location.calls is not None
    assert "shutdown" in moved.culprit.location.calls
    assert "concurrent/futures/thread.py:235" in moved.culprit.location.calls


def test_the_interpreters_exit_hands_the_blame_to_the_thread_it_waits_for():
    exiting = b.thread(
        60, b.frame(THREADING, 1590, "_shutdown"), name="MainThread", syscall="futex"
    )
    monitor = b.thread(
        61,
        b.frame("monitor.py", 14, "watch", code="time.sleep(5)"),
        name="monitor",
        syscall="clock_nanosleep",
    )
    job = JobView(b.bundle(b.process(60, exiting, monitor)))
    exit_place = Location(file=THREADING, line=1590, function="_shutdown")
    loop = Location(file=f"{b.USER}/monitor.py", line=14, function="watch")
    moved = in_user_code(
        job,
        _finding(
            Culprit(pid=60, tid=60, location=exit_place), Culprit(pid=60, tid=61, location=loop)
        ),
    )
    assert moved.culprit is not None and moved.culprit.tid == 61
    assert moved.related[0].tid == 60
    assert moved.related[0].location is not None and not moved.related[0].location.user_code


def test_a_culprit_already_in_user_code_is_left_alone():
    thread = b.thread(70, b.frame("train.py", 5, "main"), name="MainThread", syscall="futex")
    job = JobView(b.bundle(b.process(70, thread)))
    finding = _finding(
        Culprit(
            pid=70, tid=70, location=Location(file=f"{b.USER}/train.py", line=5, function="main")
        )
    )
    assert in_user_code(job, finding) is finding


def test_hangdoctors_own_writer_thread_is_never_a_culprit():
    from hangdoctor.rules.user_code import blames_hangdoctor

    writer = b.thread(
        81,
        b.frame(f"{b.STDLIB}/json/decoder.py", 353, "JSONDecoder.raw_decode"),
        b.frame(
            f"{b.SITE}/hangdoctor/instrument/bootstrap/_hangdoctor_writer.py", 59, "_write_loop"
        ),
        name="hangdoctor-status",
        syscall="clock_nanosleep",
        owns_gil=True,
    )
    main = b.thread(80, b.frame("train.py", 5, "main"), name="MainThread", syscall="futex")
    job = JobView(b.bundle(b.process(80, main, writer)))
    place = Location(file=f"{b.STDLIB}/json/decoder.py", line=353, function="raw_decode")
    assert blames_hangdoctor(job, _finding(Culprit(pid=80, tid=81, location=place)))
    assert not blames_hangdoctor(job, _finding(Culprit(pid=80, tid=80, location=place)))


def _reads_own_pipe(tid: int) -> ThreadEvidence:
    """A multiprocessing queue's reader: blocked in read(3) on the pipe its process created."""
    return b.thread(
        tid,
        b.frame(f"{b.STDLIB}/multiprocessing/connection.py", 395, "Connection._recv"),
        b.frame(f"{b.STDLIB}/multiprocessing/queues.py", 103, "Queue.get"),
        b.frame("train.py", 19, "main", code="item = results.get()"),
        name="MainThread",
        syscall="read",
        args=(3,),
    )


def _queue_owner(*threads: ThreadEvidence) -> JobView:
    files = {3: ("pipe:[77]", "r"), 4: ("pipe:[77]", "w")}
    return JobView(b.bundle(b.process(10, *threads, files=files)))


def test_a_pipe_only_its_own_process_holds_waits_for_no_one_when_no_other_thread_is_left():
    graph = build_wait_graph(_queue_owner(_reads_own_pipe(10)))
    chain = graph.follow((10, 10))
    assert chain.sink is Sink.NOBODY
    assert "no other thread of its own is left" in chain.reason
    assert (10, 10) in graph.no_waker_left  # so a provider's death can be linked to it


def test_another_thread_of_the_pipes_own_process_could_still_write_to_it():
    writer = b.thread(11, b.frame("loader.py", 12, "produce", code="time.sleep(1)"), state="R")
    graph = build_wait_graph(_queue_owner(_reads_own_pipe(10), writer))
    assert [(e.waited, e.certain) for e in graph.edges[(10, 10)]] == [((10, 11), False)]
    assert (10, 10) not in graph.no_waker_left


def _acquires_a_lock_no_one_holds(tid: int) -> ThreadEvidence:
    return b.thread(
        tid,
        b.frame("train.py", 21, "main", code="LOCK.acquire()", acquiring=("LOCK",)),
        name="MainThread",
        syscall="futex",
    )


def test_a_lock_that_no_running_code_holds_and_no_one_is_left_to_release_waits_for_no_one():
    graph = build_wait_graph(JobView(b.bundle(b.process(10, _acquires_a_lock_no_one_holds(10)))))
    chain = graph.follow((10, 10))
    assert chain.sink is Sink.NOBODY
    assert "ended without releasing it" in chain.reason


def test_a_lock_no_thread_holds_may_be_released_by_another_process_of_the_job():
    # a multiprocessing lock is acquired from the user's line as well: another process that
    # still runs could release it
    other = b.process(11, b.thread(11, b.frame("worker.py", 5, "work"), state="R"), ppid=10)
    job = JobView(b.bundle(b.process(10, _acquires_a_lock_no_one_holds(10)), other))
    assert build_wait_graph(job).follow((10, 10)).sink is not Sink.NOBODY


# --- issue 27, the wait matrix's second part -------------------------------------------------

MANAGERS = f"{b.STDLIB}/multiprocessing/managers.py"


def _asyncio_loop(tid: int) -> ThreadEvidence:
    return b.thread(
        tid,
        b.frame(f"{b.STDLIB}/selectors.py", 468, "EpollSelector.select"),
        b.frame(f"{b.STDLIB}/asyncio/base_events.py", 1884, "BaseEventLoop._run_once"),
        b.frame(f"{b.STDLIB}/asyncio/base_events.py", 607, "BaseEventLoop.run_forever"),
        b.frame("serve.py", 30, "main", code="asyncio.run(waiting())"),
        name="MainThread",
        syscall="epoll_wait",
    )


def _with_tasks(bundle: Bundle, *awaiting: str) -> Bundle:
    tasks = tuple(
        AsyncTask(pid=10, name=f"Task-{i}", awaiting=(b.frame("serve.py", 15, "waiting"),))
        if where == "future"
        else AsyncTask(
            pid=10,
            name=f"Task-{i}",
            awaiting=(
                b.frame(f"{b.STDLIB}/asyncio/streams.py", 700, "StreamReader.read"),
                b.frame("serve.py", 15, "waiting"),
            ),
        )
        for i, where in enumerate(awaiting, start=1)
    )
    return bundle.model_copy(update={"async_tasks": tasks})


def test_an_event_loop_whose_task_awaits_a_future_waits_for_another_thread_not_for_io():
    alone = JobView(_with_tasks(b.bundle(b.process(10, _asyncio_loop(10))), "future"))
    graph = build_wait_graph(alone)
    chain = graph.follow((10, 10))
    assert chain.sink is Sink.NOBODY
    assert "serve.py:15" in graph.waits[(10, 10)].summary
    assert sink_category(alone, (10, 10)) is Category.PROCESS_DEADLOCK


def test_an_event_loop_whose_task_reads_a_stream_is_left_to_its_io():
    reading = JobView(_with_tasks(b.bundle(b.process(10, _asyncio_loop(10))), "stream"))
    assert build_wait_graph(reading).follow((10, 10)).sink is not Sink.NOBODY


def _proxy_call(tid: int) -> ThreadEvidence:
    return b.thread(
        tid,
        b.frame(f"{b.STDLIB}/multiprocessing/connection.py", 395, "Connection._recv"),
        b.frame(MANAGERS, 822, "BaseProxy._callmethod"),
        b.frame("<string>", 2, "get"),
        b.frame("train.py", 20, "main", code="QUEUE.get()"),
        name="MainThread",
        syscall="read",
    )


def _server_main(tid: int) -> ThreadEvidence:
    return b.thread(
        tid,
        b.frame(THREADING, 331, "Condition.wait"),
        b.frame(MANAGERS, 176, "Server.serve_forever"),
        b.frame(MANAGERS, 600, "BaseManager._run_server"),
        syscall="futex",
    )


def _serving(tid: int) -> ThreadEvidence:
    return b.thread(
        tid,
        b.frame(THREADING, 327, "Condition.wait", local_vars={"timeout": ("None", None)}),
        b.frame(
            f"{b.STDLIB}/queue.py",
            171,
            "Queue.get",
            local_vars={"block": ("True", None), "timeout": ("None", None)},
        ),
        b.frame(MANAGERS, 273, "Server.serve_client", code="res = function(*args, **kwds)"),
        b.frame(THREADING, 982, "Thread.run"),
        syscall="futex",
    )


def test_a_manager_proxy_call_waits_for_the_servers_thread_inside_that_call():
    job = JobView(
        b.bundle(
            b.process(10, _proxy_call(10)),
            b.process(20, _server_main(20), _serving(21), ppid=10),
        )
    )
    chain = build_wait_graph(job).follow((10, 10))
    assert chain.parties == ((10, 10), (20, 21))
    assert chain.sink is Sink.NOBODY
    assert "Manager's server" in chain.reason


def test_code_a_library_generated_is_not_the_users_line():
    frames = _proxy_call(10).python.frames
    assert innermost_user_frame(frames).file.endswith("/train.py")
    alone = (b.frame("<string>", 3, "<module>", code="time.sleep(5)"),)
    assert innermost_user_frame(alone).file == "<string>"

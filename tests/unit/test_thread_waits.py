"""What a thread waits in, read from its Python frames: multiprocessing's queues and
connections, a Manager proxy's call, threading's conditions (not a lock someone holds)."""

from __future__ import annotations

from hangdoctor.analysis.job import JobView
from hangdoctor.analysis.locks import lock_wait
from hangdoctor.analysis.thread_waits import manager_call, multiprocessing_read
from hangdoctor.analysis.waits import describe_wait
from hangdoctor.evidence import build as b
from hangdoctor.evidence.model import ThreadEvidence

MP = f"{b.STDLIB}/multiprocessing"


def _get(timeout: str) -> ThreadEvidence:
    return b.thread(
        7,
        b.frame(f"{MP}/connection.py", 395, "Connection._recv"),
        b.frame(f"{MP}/connection.py", 216, "_ConnectionBase.recv_bytes"),
        b.frame(
            f"{MP}/queues.py",
            103,
            "Queue.get",
            local_vars={"block": ("True", None), "timeout": (timeout, None)},
        ),
        b.frame("prep.py", 62, "main", code="item = results.get()"),
        syscall="read",
    )


def test_a_multiprocessing_queue_read_is_named_by_the_queue_not_its_pipe():
    read = multiprocessing_read(_get("None"))
    assert read is not None and read.what == "multiprocessing.Queue.get()"
    assert read.caller.line == 62 and not read.timeout
    assert multiprocessing_read(_get("5.0")) is None
    bounded = multiprocessing_read(_get("5.0"), any_timeout=True)
    assert bounded is not None and bounded.timeout


def test_a_manager_proxy_call_names_the_proxy_and_the_server_process():
    worker = b.thread(
        30,
        b.frame(f"{MP}/connection.py", 395, "Connection._recv"),
        b.frame(
            f"{MP}/managers.py",
            822,
            "BaseProxy._callmethod",
            local_vars={"self": ("<AcquirerProxy at 0x7f2d>", None)},
        ),
        b.frame(f"{MP}/managers.py", 1056, "AcquirerProxy.__enter__"),
        b.frame("data.py", 51, "Clips.__getitem__", code="with self.lock:"),
        syscall="read",
    )
    server = b.thread(
        20,
        b.frame(f"{b.STDLIB}/threading.py", 331, "Condition.wait"),
        b.frame(f"{MP}/managers.py", 176, "Server.serve_forever"),
        b.frame(f"{MP}/managers.py", 600, "BaseManager._run_server"),
        syscall="futex",
    )
    job = JobView(
        b.bundle(
            b.process(10, b.thread(10, b.frame("train.py", 5, "main"))),
            b.process(20, server, ppid=10),
            b.process(30, worker, ppid=10),
        )
    )
    call = manager_call(job, worker)
    assert call is not None and call.proxy == "AcquirerProxy" and call.server_pid == 20
    assert manager_call(job, server) is None


def test_a_condition_waits_for_a_notify_not_for_a_lock_someone_holds():
    waiting = b.thread(
        40,
        b.frame(
            f"{b.STDLIB}/threading.py",
            327,
            "Condition.wait",
            local_vars={"timeout": ("None", None)},
            acquiring=("waiter",),
        ),
        b.frame(
            f"{b.STDLIB}/queue.py",
            171,
            "Queue.get",
            local_vars={"block": ("True", None), "timeout": ("None", None)},
        ),
        b.frame("train.py", 9, "main", code="batch = results.get()"),
        syscall="futex",
    )
    process = b.process(40, waiting)
    assert lock_wait(waiting) is None
    wait = describe_wait(JobView(b.bundle(process)), process, waiting)
    assert wait.summary == "waiting in queue.Queue.get() without a timeout"


def test_without_local_variables_the_callers_line_tells_whether_a_timeout_was_given():
    """faulthandler's stacks have no locals: `done.wait()` gave no timeout; a call with more
    arguments may have, and is taken to have."""
    from hangdoctor.analysis.thread_waits import call_arguments, timeout_and_block

    assert call_arguments("evaluator.done.wait()  # no timeout", "wait") == []
    assert call_arguments("item = q.get(timeout=5)", "get") == ["timeout=5"]
    assert call_arguments("q.put((a, b))", "put") == ["(a, b)"]
    assert call_arguments("a = my_wait()", "wait") is None
    assert call_arguments("q.get(", "get") is None  # the call goes on past this line

    def waits(function: str, code: str) -> tuple[str, str]:
        primitive = b.frame(f"{b.STDLIB}/queue.py", 171, function)
        return timeout_and_block(primitive, b.frame("train.py", 9, "main", code=code))

    assert waits("Queue.get", "batch = batches.get()") == ("None", "True")
    assert waits("Queue.get", "batch = batches.get(timeout=30)")[0] == "?"
    assert waits("Queue.get", "batch = batches.get(True, 30)")[0] == "?"
    assert waits("Queue.put", "batches.put(batch)") == ("None", "True")
    assert waits("Queue.put", "batches.put(batch, timeout=1)")[0] == "?"

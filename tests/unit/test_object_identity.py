"""One lock reached as an attribute in one thread (`self.guard`) and as a local in another
(`weights_lock`) is one node of the wait-for graph once the process named the attribute's
object (`objects-<pid>.json`, `capture.object_identity`); without that answer, names that differ
link nothing."""

from __future__ import annotations

import json

from hangdoctor.analysis.job import JobView
from hangdoctor.analysis.proof import proven_hang
from hangdoctor.analysis.waitgraph import Sink, build_wait_graph
from hangdoctor.capture.object_identity import with_object_attributes
from hangdoctor.evidence import build as b
from hangdoctor.evidence.model import Bundle
from hangdoctor.probes.job_objects import ObjectsAnswer, parse_objects

THREADING = f"{b.STDLIB}/threading.py"
WEIGHTS, STATS, PUBLISHER = 0x7F0000001000, 0x7F0000002000, 0x7F0000003000


def _deadlock() -> Bundle:
    trainer = b.thread(
        40,
        b.frame(
            "train.py",
            30,
            "main",
            code="with stats_lock:",
            held=[("weights_lock", 27)],
            acquiring=["stats_lock"],
            local_vars={
                "weights_lock": ("<_thread.lock>", WEIGHTS),
                "stats_lock": ("<_thread.lock>", STATS),
            },
        ),
        name="MainThread",
        syscall="futex",
    )
    publisher = b.thread(
        41,
        b.frame(
            "train.py",
            20,
            "StatsPublisher.run",
            code="with self.guard:",
            held=[("self.counters_lock", 18)],
            acquiring=["self.guard"],
            local_vars={"self": ("<StatsPublisher>", PUBLISHER)},
        ),
        name="stats-publisher",
        syscall="futex",
    )
    return b.bundle(b.process(40, trainer, publisher))


def _answer() -> str:
    lock = "_thread.lock"
    return json.dumps(
        {
            "pid": 40,
            "attributes": [
                [PUBLISHER, "guard", WEIGHTS, lock],
                [PUBLISHER, "counters_lock", STATS, lock],
            ],
        }
    )


def test_the_answer_names_each_attributes_object():
    pid, answer = parse_objects(_answer()) or (0, ObjectsAnswer({}))
    assert pid == 40
    assert answer.attributes[(PUBLISHER, "guard")] == (WEIGHTS, "_thread.lock")
    assert parse_objects("{not json") is None
    assert parse_objects(json.dumps({"pid": 1, "attributes": [[1, 2]]})) is None


def test_with_the_processs_answer_the_two_threads_are_a_proven_cycle():
    parsed = parse_objects(_answer())
    assert parsed is not None
    job = JobView(with_object_attributes(_deadlock(), {40: parsed[1]}))
    graph = build_wait_graph(job)
    chain = graph.follow((40, 40))
    assert chain.sink is Sink.CYCLE
    assert {e.why for e in chain.edges} == {"holds stats_lock", "holds self.guard"}
    assert all(e.certain for e in chain.edges)
    assert proven_hang(job) is not None


def test_without_it_differently_named_locks_link_nothing():
    job = JobView(_deadlock())
    assert build_wait_graph(job).follow((40, 40)).sink is not Sink.CYCLE
    assert proven_hang(job) is None


def test_an_answer_about_another_process_changes_nothing():
    parsed = parse_objects(_answer())
    assert parsed is not None
    job = JobView(with_object_attributes(_deadlock(), {99: parsed[1]}))
    assert build_wait_graph(job).follow((40, 40)).sink is not Sink.CYCLE


_IN_THE_JOB = """
import json, os, sys, tempfile, threading, time
sys.path.insert(0, sys.argv[1])
import _hangdoctor_objects as objects, _hangdoctor_protocol as protocol
import _hangdoctor_state as shared

folder = tempfile.mkdtemp()
shared.probe.directory = folder
with open(os.path.join(folder, protocol.REQUEST_FILE), "w") as request:
    request.write("1")

class Publisher(threading.Thread):
    def __init__(self, lock):
        super().__init__(daemon=True)
        self.guard, self.stop = lock, threading.Event()
    def run(self):
        with self.guard:
            self.stop.wait()

class Guarded:
    @property
    def __dict__(self):  # a class that computes its __dict__: never called
        raise SystemExit("__dict__ ran")

class Cache:
    def __init__(self):
        self.guard = threading.RLock()

def refresh(cache, done):
    cache.guard.acquire()  # taken in a function that returns: no frame shows it held
    cache.guard.acquire()
    done.wait()

lock, guarded = threading.Lock(), Guarded()
publisher = Publisher(lock)
publisher.start()
cache, done = Cache(), threading.Event()
refresher = threading.Thread(target=refresh, args=(cache, done), daemon=True)
refresher.start()
time.sleep(0.1)
objects.answer_object_request()
objects.answer_object_request()  # once per request: the second call writes nothing new
with open(os.path.join(folder, protocol.objects_file(os.getpid()))) as answer:
    print(json.dumps({
        "lock": id(lock), "publisher": id(publisher), "answer": json.load(answer),
        "guard": id(cache.guard), "refresher": refresher.native_id, "file": __file__,
    }))
publisher.stop.set()
done.set()
"""


def test_the_process_names_the_object_behind_self_guard(tmp_path):
    """The in-job part, in a real interpreter: the thread object's `guard` is the local lock,
    and a class whose `__dict__` is computed is left alone."""
    import subprocess
    import sys
    from pathlib import Path

    import hangdoctor.instrument as instrument

    script = tmp_path / "job.py"
    script.write_text(_IN_THE_JOB)
    done = subprocess.run(
        [sys.executable, str(script), str(Path(instrument.__file__).parent / "bootstrap")],
        capture_output=True,
        timeout=60,
        check=True,
    )
    said = json.loads(done.stdout)
    parsed = parse_objects(json.dumps(said["answer"]))
    assert parsed is not None
    attributes = parsed[1].attributes
    assert attributes[(said["publisher"], "guard")] == (said["lock"], "_thread.lock")
    assert attributes[(said["publisher"], "stop")][1] == "threading.Event"
    # an RLock records its owner: the thread that took it twice, in a function since returned
    assert parsed[1].owners[said["guard"]] == (said["refresher"], 2, "_thread.RLock")
    # a module's globals are named by the module's file (py-spy shows no module locals)
    assert ("cache.guard", said["guard"], "_thread.RLock") in parsed[1].globals[said["file"]]


QUEUE, LOADER = 0x7F0000004000, 0x7F0000005000


def test_of_the_threads_that_could_fill_a_queue_the_one_holding_it_comes_first():
    """The main thread waits in `batches.get()`; a heartbeat thread sleeps, the loader thread
    holds the same queue as `self.out` (named by its process) and waits elsewhere: the graph
    names the loader, and says why."""
    getter = b.thread(
        20,
        b.frame(THREADING, 327, "Condition.wait", local_vars={"timeout": ("None", None)}),
        b.frame(
            f"{b.STDLIB}/queue.py",
            171,
            "Queue.get",
            local_vars={
                "self": ("<Queue>", QUEUE),
                "block": ("True", None),
                "timeout": ("None", None),
            },
        ),
        b.frame(
            "train.py",
            30,
            "main",
            code="batch = batches.get()",
            local_vars={"batches": ("<Queue>", QUEUE)},
        ),
        name="MainThread",
        syscall="futex",
    )
    heartbeat = b.thread(
        21,
        b.frame("train.py", 12, "beat", code="time.sleep(1)"),
        name="heartbeat",
        syscall="clock_nanosleep",
    )
    loader = b.thread(
        22,
        b.frame(
            "loader.py",
            40,
            "Loader.run",
            code="record = self.source.readline()",
            local_vars={"self": ("<Loader>", LOADER)},
        ),
        name="loader",
        syscall="read",
    )
    bundle = b.bundle(b.process(20, getter, heartbeat, loader))
    named = with_object_attributes(
        bundle, {20: ObjectsAnswer({(LOADER, "out"): (QUEUE, "queue.Queue")})}
    )
    edges = build_wait_graph(JobView(named)).edges[(20, 20)]
    assert [e.waited for e in edges] == [(20, 22), (20, 21)]
    assert "as self.out" in edges[0].why and not any(e.certain for e in edges)
    unnamed = build_wait_graph(JobView(bundle)).edges[(20, 20)]
    assert all("same object" not in e.why for e in unnamed)

"""Proof of a hang from the stacks (`analysis.proof`) and when `run` looks for one
(`supervise.proof_watch`)."""

from __future__ import annotations

from hangdoctor.analysis.job import JobView
from hangdoctor.analysis.proof import proven_hang, top_level
from hangdoctor.evidence import build as b
from hangdoctor.evidence.model import JobRecord, ThreadEvidence
from hangdoctor.supervise.proof_watch import ProofWatch

THREADING = f"{b.STDLIB}/threading.py"


def _takes_lock_twice(tid: int = 10) -> ThreadEvidence:
    frame = b.frame(
        "train.py",
        6,
        "main",
        code="with lock:",
        acquiring=("lock",),
        held=(("lock", 5, "with"),),
    )
    return b.thread(tid, frame, name="MainThread", syscall="futex")


def _waits_on_queue(tid: int = 10, timeout: str = "None") -> ThreadEvidence:
    call = "batches.get()" if timeout == "None" else f"batches.get(timeout={timeout})"
    return b.thread(
        tid,
        b.frame(THREADING, 327, "Condition.wait", local_vars={"timeout": (timeout, None)}),
        b.frame(f"{b.STDLIB}/queue.py", 171, "Queue.get", local_vars={"timeout": (timeout, None)}),
        b.frame("train.py", 30, "main", code=f"batch = {call}"),
        name="MainThread",
        syscall="futex",
    )


def test_a_thread_taking_a_lock_it_holds_proves_the_hang():
    why = proven_hang(JobView(b.bundle(b.process(10, _takes_lock_twice()))))
    assert why is not None and "main process (pid 10)" in why


def test_a_queue_another_thread_may_still_fill_proves_nothing():
    producer = b.thread(
        11, b.frame("train.py", 12, "produce", code="time.sleep(4)"), syscall="nanosleep"
    )
    job = JobView(b.bundle(b.process(10, _waits_on_queue(), producer)))
    assert proven_hang(job) is None


def test_a_queue_no_thread_is_left_to_fill_proves_the_hang():
    assert proven_hang(JobView(b.bundle(b.process(10, _waits_on_queue())))) is not None


#: The loader thread that should have filled the queue died of an exception.
_LOADER_DIED = (
    "Exception in thread Thread-1 (load):",
    "Traceback (most recent call last):",
    f'  File "{THREADING}", line 1045, in _bootstrap_inner',
    "    self.run()",
    '  File "/job/train.py", line 18, in load',
    '    labels.put(record["label"])',
    "KeyError: 'label'",
)


def _after_the_loader_died(waiting: ThreadEvidence) -> JobView:
    bundle = b.bundle(b.process(10, waiting))
    return JobView(
        bundle.model_copy(update={"job": JobRecord(started_at=0.0, output_tail=_LOADER_DIED)})
    )


def test_a_queue_whose_only_filler_died_proves_the_hang():
    assert proven_hang(_after_the_loader_died(_waits_on_queue())) is not None


def test_a_wait_given_a_timeout_proves_nothing():
    """The job may mean to give up and raise when the timeout runs out."""
    assert proven_hang(_after_the_loader_died(_waits_on_queue(timeout="60"))) is None


def test_a_timed_wait_seen_without_local_variables_proves_nothing():
    waiting = _waits_on_queue(timeout="60")
    assert waiting.python is not None
    bare = tuple(f.model_copy(update={"locals": ()}) for f in waiting.python.frames)
    thread = waiting.model_copy(
        update={"python": waiting.python.model_copy(update={"frames": bare})}
    )
    assert proven_hang(_after_the_loader_died(thread)) is None


def test_every_top_level_process_must_be_stuck():
    computing = b.thread(20, b.frame("train.py", 40, "main", code="loss.backward()"), state="R")
    job = JobView(b.bundle(b.process(10, _takes_lock_twice()), b.process(20, computing)))
    assert sorted(top_level(job)) == [(10, 10), (20, 20)]
    assert proven_hang(job) is None


def test_a_worker_is_not_top_level_under_its_user_parent():
    worker = b.thread(11, b.frame("train.py", 9, "work", code="time.sleep(1)"), syscall="nanosleep")
    job = JobView(b.bundle(b.process(10, _takes_lock_twice()), b.process(11, worker, ppid=10)))
    assert top_level(job) == [(10, 10)]


def test_opening_a_fifo_nobody_in_the_job_will_open_proves_nothing():
    opener = b.thread(
        10,
        b.frame("publish.py", 43, "main", code='with open(path, "rb") as handle:'),
        name="MainThread",
        syscall="openat",
        wchan="wait_for_partner",
    )
    assert proven_hang(JobView(b.bundle(b.process(10, opener)))) is None


def test_the_first_look_waits_for_a_share_of_the_threshold_within_bounds():
    watch = ProofWatch()
    assert not watch.due(1.5, idle_since_s=1.0, threshold_s=3.0)  # idle 0.5 s < 1 s
    assert watch.due(2.0, idle_since_s=1.0, threshold_s=3.0)
    slow = ProofWatch()
    assert not slow.due(5.0, idle_since_s=1.0, threshold_s=600.0)  # idle 4 s < 5 s cap
    assert slow.due(6.0, idle_since_s=1.0, threshold_s=600.0)


def test_a_proof_counts_once_two_looks_in_a_row_show_it():
    watch = ProofWatch()
    assert watch.due(3.0, idle_since_s=0.0, threshold_s=8.0)
    assert watch.saw(3.0, "stuck") is None
    assert not watch.due(3.5, idle_since_s=0.0, threshold_s=8.0)  # confirmed a second later
    assert watch.due(4.0, idle_since_s=0.0, threshold_s=8.0)
    assert watch.saw(4.0, "stuck") == "stuck"


def test_looks_are_few_per_quiet_spell_and_start_again_with_the_next():
    watch = ProofWatch()
    for now in (2.0, 4.0, 6.0):
        assert watch.due(now, idle_since_s=0.0, threshold_s=8.0)
        assert watch.saw(now, None) is None
    assert not watch.due(20.0, idle_since_s=0.0, threshold_s=8.0)
    assert watch.due(30.0, idle_since_s=27.0, threshold_s=8.0)  # a new spell


def test_a_different_proof_on_the_second_look_is_no_confirmation():
    watch = ProofWatch()
    watch.saw(2.0, "one chain")
    assert watch.saw(3.0, "another chain") is None
    assert watch.saw(4.0, "another chain") == "another chain"


def test_what_follows_a_look_may_be_the_looks_own_doing():
    """A look makes the job answer (which objects its frames hold) and py-spy attaches: the
    CPU and I/O that shows right after is not taken for the job's work, or each look would
    restart the quiet spell that called for it (FSDP jobs were never declared that way)."""
    watch = ProofWatch()
    assert not watch.echoes(100.0)  # no look yet
    assert watch.due(3.0, idle_since_s=0.0, threshold_s=10.0)
    watch.saw(3.5, None)
    assert watch.echoes(4.0) and watch.echoes(6.9)
    assert not watch.echoes(7.1)

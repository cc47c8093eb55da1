"""The exception that ended a process, recorded whole by the instrumentation, stands in for the
traceback the output tore or lost (`analysis.job_output`), and the failure is named from it."""

from __future__ import annotations

from hangdoctor.analysis.job import JobView
from hangdoctor.analysis.job_output import job_output
from hangdoctor.evidence import build as b
from hangdoctor.evidence.model import JobRecord, ProgressStatus, UncaughtException
from hangdoctor.rules.engine import run_rules

_DIED = """Traceback (most recent call last):
  File "/srv/train.py", line 22, in <module>
    for batch in loader:
  File "/venv/lib/python3.11/site-packages/torch/utils/data/dataloader.py", line 1304, in _try_get_data
    raise RuntimeError(
RuntimeError: DataLoader worker (pid(s) 4242) exited unexpectedly
"""
# What Python printed when PyTorch's SIGCHLD handler raised as the traceback was printed: its
# first line, then the interpreter's dump of the exception it could not print.
_TORN = (
    "batch of 4",
    "Traceback (most recent call last):",
    "object address  : 0x7f629f76efe0",
    "object type name: EOFError",
    "object repr     : EOFError()",
    "lost sys.stderr",
)


def _record(output: tuple[str, ...], *uncaught: UncaughtException, rank: int | None = None):
    return JobRecord(
        command=("python", "train.py"),
        started_at=0.0,
        ended_at=9.0,
        exit_code=1,
        output_tail=output,
        uncaught=uncaught,
        progress=(ProgressStatus(pid=100, rank=rank, updated_at=8.0),),
    )


def test_a_printed_exception_is_not_repeated():
    printed = ("batch of 4", *_DIED.splitlines())
    record = _record(printed, UncaughtException(pid=100, text=_DIED))
    assert job_output(record) == printed


def test_a_torn_traceback_is_followed_by_the_recorded_one_with_its_rank():
    record = _record(_TORN, UncaughtException(pid=100, text=_DIED), rank=3)
    lines = job_output(record)
    assert lines[: len(_TORN)] == _TORN
    assert lines[-1] == "[rank3]: RuntimeError: DataLoader worker (pid(s) 4242) exited unexpectedly"


def test_a_worker_death_is_named_when_the_printed_traceback_was_torn():
    torn = _record(_TORN)
    recorded = _record(_TORN, UncaughtException(pid=100, text=_DIED))
    bundle = b.bundle(b.process(100, ppid=None)).model_copy(update={"snapshots": ()})
    before = run_rules(JobView(bundle.model_copy(update={"job": torn}))).findings[0]
    after = run_rules(JobView(bundle.model_copy(update={"job": recorded}))).findings[0]
    assert before.category != "data.worker_killed"  # what the output alone allows
    assert after.category == "data.worker_killed"
    assert any("4242" in line for line in after.evidence), after.evidence


def test_an_exception_raised_after_the_hang_was_declared_is_left_out():
    """A rank that loses its peers as the hung job is ended raises too: a consequence."""
    record = _record(
        _TORN,
        UncaughtException(pid=100, text=_DIED, at=130.0),  # as the job was ended
    ).model_copy(update={"started_at": 100.0, "hang_declared_s": 20.0})
    assert job_output(record) == _TORN
    before = record.model_copy(
        update={"uncaught": (UncaughtException(pid=100, text=_DIED, at=110.0),)}
    )
    assert job_output(before)[-1].endswith("exited unexpectedly")

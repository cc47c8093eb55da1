"""A rank that died of an uncaught exception of its own and then aborted as it tore down (a C++
thread still running at exit: "terminate called without an active exception", SIGABRT in
torchrun's summary): the exception is the cause, not the signal."""

from __future__ import annotations

from hangdoctor.analysis.job import JobView
from hangdoctor.evidence.model import Bundle, JobRecord
from hangdoctor.rules.engine import run_rules

TRAIN = "/home/ml/train.py"
_RAISED = [
    "[rank1]: Traceback (most recent call last):",
    f'[rank1]:   File "{TRAIN}", line 40, in <module>',
    "[rank1]:     main()",
    f'[rank1]:   File "{TRAIN}", line 28, in main',
    "[rank1]:     total += read_label(record)",
    f'[rank1]:   File "{TRAIN}", line 22, in read_label',
    '[rank1]:     raise RuntimeError("reading a label failed:\\n" + traceback.format_exc())',
    "[rank1]: RuntimeError: reading a label failed:",
    "[rank1]: Traceback (most recent call last):",
    f'[rank1]:   File "{TRAIN}", line 20, in read_label',
    '[rank1]:     return record["label"]',
    "[rank1]: KeyError: 'label'",
    "",
    "terminate called without an active exception",
]
_PEER_LOST = [
    "[rank0]: Traceback (most recent call last):",
    f'[rank0]:   File "{TRAIN}", line 29, in main',
    "[rank0]:     dist.all_reduce(total)",
    "[rank0]: RuntimeError: [../third_party/gloo/gloo/transport/tcp/pair.cc:553] Connection "
    "closed by peer [127.0.0.1]:16791",
]
_ABORTED = [
    "E1205 10:59:42.522000 26041 torch/distributed/elastic/multiprocessing/api.py:1002] "
    "failed (exitcode: -6) local_rank: 1 (pid: 26061) of binary: /usr/bin/python",
    "torch.distributed.elastic.multiprocessing.errors.ChildFailedError: ",
    "============================================================",
    f"{TRAIN} FAILED",
    "------------------------------------------------------------",
    "Root Cause (first observed failure):",
    "[0]:",
    "  time      : 2026-12-05_10:59:42",
    "  host      : localhost",
    "  rank      : 1 (local_rank: 1)",
    "  exitcode  : -6 (pid: 26061)",
    "  error_file: <N/A>",
    "  traceback : Signal 6 (SIGABRT) received by PID 26061",
    "============================================================",
]


def _root(*output: str):
    record = JobRecord(started_at=0.0, exit_code=1, output_tail=output)
    bundle = Bundle(tool_version="test", created_at=0.0, target_pid=1, job=record)
    return run_rules(JobView(bundle)).findings[0]


def test_the_exception_before_the_abort_is_the_root_cause_at_its_origin():
    root = _root(*_RAISED, *_PEER_LOST, *_ABORTED)
    assert root.category.value == "process.exception"
    assert root.culprit is not None and root.culprit.rank == 1
    assert root.culprit.location is not None and root.culprit.location.line == 20


def test_an_abort_with_no_exception_of_its_own_is_the_rank_that_exited():
    root = _root(*_PEER_LOST, *_ABORTED)
    assert root.category.value == "distributed.rank_exited"
    assert root.culprit is not None and root.culprit.rank == 1

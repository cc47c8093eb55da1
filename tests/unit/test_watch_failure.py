"""The sidecar of a watched job: its judgement of how the job ended (`standalone.job_end`),
from the records its processes wrote as they ended and what faulthandler wrote, its lock (one
sidecar per report directory) and the tail that stands in for the job's output."""

from __future__ import annotations

import signal
from pathlib import Path

from hangdoctor.standalone import sidecar
from hangdoctor.standalone.failure_report import output_tail
from hangdoctor.standalone.job_end import fatal_signal, judge


def _status(pid: int, rank: int | None = None, at: float = 10.0, **fields: object) -> dict:
    return {"pid": pid, "rank": rank, "updated_at": at, "records_exit": True, **fields}


def _gone(pid: int) -> float:
    return 20.0 + pid / 1000


def test_a_clean_exit_and_a_running_process_are_no_failure() -> None:
    assert judge([_status(1, exit_code=0)], _gone, {}, ()) is None
    assert judge([_status(1)], lambda pid: None, {}, ()) is None  # still running


def test_an_exception_is_the_failure_and_a_rank_the_launcher_stopped_comes_after() -> None:
    statuses = [
        _status(100, rank=0, at=1.0),  # ended by SIGTERM (stopped), its last status earlier
        _status(101, rank=1, at=5.0, exit_code=1, exit_traceback="Traceback ...\nValueError"),
    ]
    failure = judge(statuses, _gone, {}, stopped=[100])
    assert failure is not None
    assert (failure.first.pid, failure.exit_code, failure.signal) == (101, 1, None)
    assert [e.pid for e in failure.failures] == [101, 100]
    assert failure.failures[1].stopped and failure.failures[1].signal == signal.SIGTERM


def test_a_process_gone_without_a_record_was_killed_and_faulthandler_names_the_signal() -> None:
    killed = judge([_status(7)], _gone, {}, ())
    assert killed is not None and (killed.exit_code, killed.signal) == (137, signal.SIGKILL)
    crashed = judge([_status(7)], _gone, {7: "Fatal Python error: Aborted\n\nThread ..."}, ())
    assert crashed is not None and (crashed.exit_code, crashed.signal) == (134, signal.SIGABRT)
    assert fatal_signal("Fatal Python error: Segmentation fault\n") == signal.SIGSEGV
    assert fatal_signal("garbage") == signal.SIGSEGV


def test_only_sigterm_is_still_named_and_a_hang_or_a_ctrl_c_is_not_a_failure() -> None:
    stopped = judge([_status(3)], _gone, {}, stopped=[3])
    assert stopped is not None and stopped.exit_code == 143
    hung = [_status(3, exit_code=124, exit_hung=True), _status(4)]
    assert judge(hung, _gone, {}, stopped=[4]) is None
    assert (
        judge([_status(3, exit_code=130, exit_traceback="KeyboardInterrupt")], _gone, {}, ())
        is None
    )


def test_processes_that_do_not_record_their_end_are_not_judged() -> None:
    worker = {"pid": 9, "updated_at": 1.0}  # a DataLoader worker: its parent is the job
    assert judge([worker, _status(1, exit_code=0)], _gone, {}, ()) is None
    assert judge([{"pid": "x"}, {"rank": 1}], _gone, {}, ()) is None


def test_one_sidecar_per_report_directory(tmp_path: Path) -> None:
    first = sidecar._lock(tmp_path)
    assert first is not None
    assert sidecar._lock(tmp_path) is None, "a restarted rank's sidecar leaves it to the first"
    del first
    assert sidecar._lock(tmp_path) is not None


def test_the_recorded_tracebacks_stand_in_for_the_output_with_rank_prefixes_and_redacted() -> None:
    statuses = [
        _status(
            5,
            rank=1,
            exit_code=1,
            exit_traceback="Traceback (most recent call last):\n"
            "ValueError: token=hf_abcdefghijklmnopqrstuvwxyz0123456789",
        ),
        _status(6, exit_code=2, exit_traceback="SystemExit: 2"),
    ]
    failure = judge(statuses, _gone, {}, ())
    assert failure is not None
    tail = output_tail(failure)
    assert tail[0] == "[rank1]: Traceback (most recent call last):"
    assert tail[1].startswith("[rank1]: ValueError: token=") and "hf_abc" not in tail[1]
    assert tail[2] == "SystemExit: 2"

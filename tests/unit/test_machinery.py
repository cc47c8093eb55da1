"""A busy process whose only thread on a CPU is a pool's housekeeping spins, it does not
compute (`analysis.machinery`): the threads are those py-spy saw in real runs of the scenario
programs (CPython's pool re-scanning a worker that died; a pool worker in the user's regex; a
user's loop polling a flag), paths made neutral."""

from __future__ import annotations

import json

import pytest

from hangdoctor.analysis.machinery import coordinates_only, polls_only, rests
from hangdoctor.evidence.model import Frame, KernelThreadState, PythonThread, ThreadEvidence
from tests.conftest import FIXTURES

RECORDED = json.loads((FIXTURES / "busy_threads.recorded.json").read_text())


def threads(name: str) -> list[PythonThread]:
    return [PythonThread.model_validate(thread) for thread in RECORDED[name]]


@pytest.mark.parametrize(
    "name", ["pool_rescans_dead_worker_in_wait", "pool_rescans_dead_worker_in_maintain"]
)
def test_a_pool_re_scanning_its_dead_worker_spins_while_the_user_waits(name: str) -> None:
    seen = threads(name)
    main = next(t for t in seen if t.name == "MainThread")
    assert not main.active  # the user's thread waits in pool.map
    assert polls_only(seen)


@pytest.mark.parametrize("name", ["pool_worker_runs_user_regex", "user_thread_spins"])
def test_a_thread_in_the_users_code_computes(name: str) -> None:
    assert not polls_only(threads(name))


def test_hangdoctors_own_threads_say_nothing_of_the_job() -> None:
    """Its status writer on a CPU is neither the job's work nor the machinery's spin; a process
    still importing the instrumentation at start-up is starting (seen under load: a healthy
    two-rank job declared hung at S)."""
    ours = [t for t in threads("pool_worker_runs_user_regex") if t.name == "hangdoctor-answer"]
    assert ours and ours[0].active
    assert not any(coordinates_only(t.frames) for t in ours)
    assert not polls_only(ours)
    bootstrap = Frame(
        function="<module>",
        file="/home/ml/.venv/lib/python3.11/site-packages/hangdoctor/instrument/bootstrap/"
        "sitecustomize.py",
        line=40,
    )
    importing = PythonThread(name="MainThread", active=True, frames=(bootstrap,))
    assert not polls_only([importing])
    assert not rests({1: importing}, [_kernel(1, "R")])


def test_a_user_callback_on_the_result_thread_is_work() -> None:
    """The result handler calls `apply_async(callback=...)` in the user's code: that computes."""
    handler = Frame(
        function="Pool._handle_results",
        file="/usr/lib/python3.11/multiprocessing/pool.py",
        line=592,
    )
    callback = Frame(function="merge_counts", file="/home/ml/project/prep.py", line=12)
    assert coordinates_only((handler,))
    assert not coordinates_only((callback, handler))


def test_native_threads_and_no_active_thread_count_as_computing() -> None:
    """OpenMP's or XLA's threads have no Python frame; py-spy may see no Python thread on a CPU
    while they compute."""
    native = Frame(function="gomp_team_barrier_wait", file="libgomp.so.1", line=0, native=True)
    assert not coordinates_only((native,))
    idle = [t.model_copy(update={"active": False}) for t in threads("user_thread_spins")]
    assert not polls_only(idle)


def _kernel(tid: int, state: str) -> ThreadEvidence:
    return ThreadEvidence(tid=tid, kernel=KernelThreadState(state=state))


def test_a_process_rests_only_when_no_thread_of_it_runs() -> None:
    asleep = {1: PythonThread(name="MainThread"), 2: PythonThread(name="Thread-1")}
    assert rests(asleep, [_kernel(1, "S"), _kernel(2, "S"), _kernel(3, "S")])
    # tid 3 has no Python stack (an OpenMP thread) and runs: the process computes
    assert not rests(asleep, [_kernel(1, "S"), _kernel(2, "S"), _kernel(3, "R")])
    on_cpu = {**asleep, 2: PythonThread(name="Thread-1", active=True)}
    assert not rests(on_cpu, [_kernel(1, "S"), _kernel(2, "R")])

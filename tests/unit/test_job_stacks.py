"""Stacks the job writes itself (faulthandler), read back onto the right threads."""

from __future__ import annotations

import faulthandler
import json
import os
import signal
import subprocess
import sys
import threading
from pathlib import Path

from hypothesis import given, settings
from hypothesis import strategies as st

import hangdoctor.instrument
from hangdoctor.probes.job_stacks import handles_signal, parse_dump
from hangdoctor.probes.job_stacks import remove_stale as remove_stale_files


def test_a_real_dump_lands_on_the_right_threads(tmp_path):
    started, stop = threading.Event(), threading.Event()

    def waiting_helper() -> None:
        started.set()
        stop.wait()  # the line the dump must show for this thread

    helper = threading.Thread(target=waiting_helper, name="helper")
    helper.start()
    started.wait()
    try:
        with open(tmp_path / "stacks.txt", "w+") as handle:
            faulthandler.dump_traceback(handle, all_threads=True)
            handle.seek(0)
            text = handle.read()
    finally:
        stop.set()
        helper.join()
    idents = {t.ident or 0: t.native_id or 0 for t in (threading.main_thread(), helper)}
    threads = parse_dump(text, idents)
    assert set(threads) == {os.getpid(), helper.native_id}
    assert threads[os.getpid()].frames[0].function == "test_a_real_dump_lands_on_the_right_threads"
    helper_frames = [f.function for f in threads[helper.native_id or 0].frames]
    assert "waiting_helper" in helper_frames and helper_frames[0] == "wait"


def test_threads_missing_from_the_map_are_left_out():
    text = (
        "Thread 0x00007f0000000001 (most recent call first):\n"
        '  File "/x.py", line 3 in f\n\n'
        "Current thread 0x00007f0000000002 (most recent call first):\n"
        '  File "/y.py", line 9 in g\n'
    )
    threads = parse_dump(text, {0x7F0000000002: 42})
    assert list(threads) == [42] and threads[42].frames[0].line == 9


def test_a_handler_is_seen_before_any_signal_is_sent():
    number = signal.SIGRTMIN + 7
    assert not handles_signal(os.getpid(), number)
    previous = signal.signal(number, lambda *_: None)
    try:
        assert handles_signal(os.getpid(), number)
    finally:
        signal.signal(number, previous)


@settings(max_examples=200, deadline=None)
@given(text=st.text(max_size=400), ident=st.integers(0, 2**64))
def test_any_text_parses_without_error(text, ident):
    parse_dump(text, {ident: 1})
    parse_dump(f"Thread {ident:#x} (most recent call first):\n{text}", {ident: 1})


def test_files_of_exited_processes_are_removed(tmp_path):
    gone = subprocess.run(
        [sys.executable, "-c", "import os; print(os.getpid())"],
        capture_output=True,
        text=True,
        check=True,
        timeout=30,
    )
    dead = int(gone.stdout)
    for pid in (dead, os.getpid()):
        (tmp_path / f"stacks-{pid}.txt").write_text("")
        (tmp_path / f"threads-{pid}.json").write_text("{}")
    (tmp_path / "status-1.json").write_text("{}")
    assert remove_stale_files(tmp_path) == 2
    assert sorted(p.name for p in tmp_path.iterdir()) == sorted(
        ["status-1.json", f"stacks-{os.getpid()}.txt", f"threads-{os.getpid()}.json"]
    )


def test_empty_fault_files_of_exited_processes_go_written_ones_stay(tmp_path):
    """An exited DataLoader worker leaves empty fault and SIGTERM files: noise. One that wrote
    its stack there (it crashed, or was stopped) left evidence."""
    gone = subprocess.run(
        [sys.executable, "-c", "import os; print(os.getpid())"],
        capture_output=True,
        text=True,
        check=True,
        timeout=30,
    )
    dead = int(gone.stdout)
    (tmp_path / f"fault-{dead}.txt").write_text("")
    (tmp_path / f"stopped-{dead}.txt").write_text("Current thread 0x1 (most recent call first):\n")
    (tmp_path / f"fault-{os.getpid()}.txt").write_text("")
    assert remove_stale_files(tmp_path) == 1
    assert sorted(p.name for p in tmp_path.iterdir()) == sorted(
        [f"stopped-{dead}.txt", f"fault-{os.getpid()}.txt"]
    )


def test_the_job_tree_survives_a_process_that_exits_while_it_is_listed(monkeypatch):
    """Seen in CI: a process exited between psutil's listing and os.getpgid, and the
    ProcessLookupError ended hangdoctor before its final report."""
    from hangdoctor.supervise import terminate

    def gone(pid: int) -> int:
        raise ProcessLookupError(3, "No such process")

    monkeypatch.setattr(terminate.os, "getpgid", gone)  # type: ignore[attr-defined]
    assert isinstance(terminate.tree(os.getpid(), pgid=12345), list)


_FORKED_WORKER = """
import json, os, sys, threading
sys.path.insert(0, {bootstrap!r})
import _hangdoctor_state as shared
import _hangdoctor_stacks as stacks
shared.probe.directory = {status_dir!r}
stacks.register_stack_dump()
os.register_at_fork(after_in_child=stacks.register_stack_dump)
child = os.fork()
if child == 0:
    os._exit(0)
os.waitpid(child, 0)
print(child)
"""


def test_a_forked_workers_thread_map_names_its_own_thread(tmp_path):
    """A DataLoader worker is forked: Python still gives its thread the parent's native_id, and
    a map built from that would put the worker's stack on the parent's main thread."""
    bootstrap = Path(hangdoctor.instrument.__file__).parent / "bootstrap"
    script = _FORKED_WORKER.format(bootstrap=str(bootstrap), status_dir=str(tmp_path))
    done = subprocess.run(
        [sys.executable, "-c", script], capture_output=True, text=True, timeout=60, check=True
    )
    child = int(done.stdout.strip())
    thread_map = json.loads((tmp_path / f"threads-{child}.json").read_text())
    assert list(thread_map["threads"].values()) == [child]

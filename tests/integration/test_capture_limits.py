"""A capture never waits on the world without a limit: a probe that blocks in the kernel (a
source file on a network mount that stopped answering, a /proc read of a process stuck in a
page fault) costs its own time limit and becomes a stated gap; the rest is captured."""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import sys
import threading
import time

from hangdoctor.capture import tree
from hangdoctor.capture.tree import CaptureOptions, capture_tree

_FOREVER = threading.Event()


def _sleeper() -> subprocess.Popen[str]:
    proc = subprocess.Popen(
        [
            sys.executable,
            "-c",
            "import time\nprint('READY', flush=True)\nwhile True:\n    time.sleep(1)\n",
        ],
        stdout=subprocess.PIPE,
        text=True,
    )
    assert proc.stdout is not None and proc.stdout.readline() == "READY\n"
    return proc


def test_source_files_that_never_answer(monkeypatch):
    monkeypatch.setattr(tree, "_SOURCES_TIMEOUT_S", 0.5)
    monkeypatch.setattr(tree, "with_source", lambda frame: _FOREVER.wait())
    proc = _sleeper()
    try:
        started = time.monotonic()
        bundle = capture_tree(proc.pid, CaptureOptions(samples=1))
        assert time.monotonic() - started < 15
    finally:
        proc.kill()
        proc.wait()
    assert [(e.probe, e.kind) for e in bundle.errors] == [("sources", "timeout")]
    process = bundle.snapshots[0].processes[0]
    frames = process.threads[0].python.frames
    assert frames and all(frame.code is None for frame in frames)


def test_a_process_whose_proc_files_never_answer(monkeypatch):
    monkeypatch.setattr(tree, "_PROCFS_TIMEOUT_S", 0.5)
    parent = subprocess.Popen(
        [
            sys.executable,
            "-c",
            "import subprocess, sys, time\n"
            "child = subprocess.Popen([sys.executable, '-c', 'import time; time.sleep(600)'])\n"
            "print(child.pid, flush=True)\ntime.sleep(600)\n",
        ],
        stdout=subprocess.PIPE,
        text=True,
    )
    assert parent.stdout is not None
    child = int(parent.stdout.readline())
    real = tree.read_process  # type: ignore[attr-defined]  # the name tree calls
    monkeypatch.setattr(
        tree, "read_process", lambda pid: _FOREVER.wait() if pid == child else real(pid)
    )
    try:
        started = time.monotonic()
        bundle = capture_tree(parent.pid, CaptureOptions(samples=1))
        assert time.monotonic() - started < 15
    finally:
        with contextlib.suppress(ProcessLookupError):
            os.kill(child, signal.SIGKILL)
        parent.kill()
        parent.wait()
    assert [p.pid for p in bundle.snapshots[0].processes] == [parent.pid]
    assert ("procfs", child, "timeout") in {(e.probe, e.pid, e.kind) for e in bundle.errors}

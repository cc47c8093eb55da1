"""The stack signal goes only where faulthandler's dump cannot crash the process: while at
most one of its threads runs, and to that thread. Real processes: one asleep, one spinning in
its main thread, one with two threads spinning side by side."""

from __future__ import annotations

import subprocess
import sys
import time
from pathlib import Path

import pytest

from hangdoctor.probes.stack_signal import safe_target

# A helper thread spins in Python while the main thread sleeps in join().
_HELPER_SPINS = (
    "import threading\n"
    "def spin():\n    while True: pass\n"
    "t = threading.Thread(target=spin)\nt.start()\nt.join()\n"
)
# Two threads hash without the GIL (hashlib releases it for large data): both run at once.
_TWO_RUN = (
    "import hashlib, threading\n"
    "data = bytes(1 << 22)\n"
    "def spin():\n    while True: hashlib.sha256(data).digest()\n"
    "threading.Thread(target=spin, daemon=True).start()\n"
    "spin()\n"
)


@pytest.fixture
def started():
    procs: list[subprocess.Popen[bytes]] = []

    def start(code: str) -> subprocess.Popen[bytes]:
        proc = subprocess.Popen([sys.executable, "-c", code])
        procs.append(proc)
        time.sleep(1.0)
        return proc

    yield start
    for proc in procs:
        proc.kill()
        proc.wait(timeout=10)


def test_an_idle_process_gets_it_process_wide(started):
    proc = started("import time\ntime.sleep(60)\n")
    assert safe_target(proc.pid) == proc.pid


def test_a_spinning_helper_thread_gets_it_itself_not_the_sleeping_main_thread(started):
    proc = started(_HELPER_SPINS)
    targets = {safe_target(proc.pid) for _ in range(20)}
    helpers = targets - {proc.pid, None}
    assert helpers, targets  # the spinning thread, which the handler then interrupts
    assert all(Path(f"/proc/{proc.pid}/task/{tid}").exists() for tid in helpers)


def test_two_threads_running_side_by_side_get_nothing(started):
    proc = started(_TWO_RUN)
    assert any(safe_target(proc.pid) is None for _ in range(20))


def test_a_gone_process_gets_nothing():
    proc = subprocess.Popen([sys.executable, "-c", "pass"])
    proc.wait(timeout=30)
    assert safe_target(proc.pid) is None

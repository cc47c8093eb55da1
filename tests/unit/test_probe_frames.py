"""hangdoctor tells the probe's own frames from the job's in a capture: the probe is several
modules (hooks, writer, requests, stacks), and a stack sampled in any of them is the
instrumentation's status thread, wherever the bootstrap folder was installed."""

from __future__ import annotations

import pytest

from hangdoctor.analysis.frames import runs_python_of_its_own
from hangdoctor.evidence import build as b
from hangdoctor.instrument.bootstrap import _hangdoctor_protocol as protocol

# A folder no path rule knows as hangdoctor's: only the file's name can tell.
ELSEWHERE = "/opt/tools/bootstrap"


@pytest.mark.parametrize("module", [protocol.PROBE_MODULE, *protocol.PROBE_PARTS])
def test_a_thread_inside_any_probe_module_is_the_probes(module: str) -> None:
    writer = b.thread(
        81,
        b.frame(f"{ELSEWHERE}/{module}.py", 40, "_write_loop"),
        name="hangdoctor-status",
        syscall="clock_nanosleep",
    )
    assert not runs_python_of_its_own(writer)


def test_a_thread_in_the_users_code_runs_python_of_its_own() -> None:
    worker = b.thread(
        82,
        b.frame(f"{b.USER}/prefetch.py", 12, "fill"),
        b.frame(f"{ELSEWHERE}/{protocol.PROBE_MODULE}.py", 40, "arm"),
        name="prefetch",
        syscall="futex",
    )
    assert runs_python_of_its_own(worker)

"""The waits a process read of itself (`kernel-<pid>.json`), put into a capture where /proc
hid them: only where the thread cannot have moved in between (asleep in both readings, not
one clock tick of CPU used), and descriptors only where /proc listed none."""

from __future__ import annotations

import json

from hangdoctor.evidence import build as b
from hangdoctor.evidence.model import Bundle, KernelThreadState, OpenFile
from hangdoctor.probes.job_kernel import SelfRead, parse_kernel_file, with_self_read_waits

# As the kernel writes them: a thread asleep in read(5, ...) with 1.23 s of CPU (123 ticks).
_STAT = "4242 (python (worker)) S 1 4242 4242 0 -1 4194304 10 0 0 0 100 23 0 0 20 0 2 0"
_SYSCALL = "0 0x5 0x7ffd1234 0x1 0x0 0x0 0x0 0x7ffd0000 0x7f00aa"


def _file(threads: dict[str, dict[str, str]], fds: dict[str, list[str]] | None = None) -> str:
    return json.dumps({"pid": 4242, "threads": threads, "fds": fds or {}})


def test_the_kernel_file_gives_state_cpu_wait_and_descriptors() -> None:
    read = parse_kernel_file(
        _file(
            {"4242": {"stat": _STAT, "wchan": "anon_pipe_read", "syscall": _SYSCALL}},
            {"5": ["pipe:[77]", "0100000"], "6": ["socket:[88]", "02"]},
        )
    )
    thread = read.threads[4242]
    assert (thread.state, thread.syscall_name, thread.syscall_args[0]) == ("S", "read", 5)
    assert thread.wchan == "anon_pipe_read" and abs(thread.cpu_seconds - 1.23) < 1e-9
    assert [(f.fd, f.target, f.mode) for f in read.files] == [
        (5, "pipe:[77]", "r"),
        (6, "socket:[88]", "rw"),
    ]


def test_unusable_files_give_nothing() -> None:
    assert parse_kernel_file("not json").threads == {}
    broken = parse_kernel_file(_file({"x": {"stat": _STAT}, "7": {"stat": "garbage"}}))
    assert broken.threads == {}


def _hidden(cpu: float, state: str = "S") -> Bundle:
    thread = b.thread(4242, b.frame("prep.py", 9, "main"), state=state, cpu=cpu)
    return b.bundle(b.process(4242, thread))


def _own(cpu: float, state: str = "S") -> SelfRead:
    kernel = KernelThreadState(
        state=state,
        wchan="anon_pipe_read",
        syscall=0,
        syscall_name="read",
        syscall_args=(5,),
        cpu_seconds=cpu,
    )
    return SelfRead({4242: kernel}, (OpenFile(fd=5, target="pipe:[77]", mode="r"),))


def _main_thread(bundle: Bundle) -> KernelThreadState:
    kernel = bundle.snapshots[0].processes[0].threads[0].kernel
    assert kernel is not None
    return kernel


def test_a_thread_that_did_not_run_in_between_gets_its_own_reading() -> None:
    filled = with_self_read_waits(_hidden(cpu=1.23), {4242: _own(cpu=1.23)})
    kernel = _main_thread(filled)
    assert (kernel.syscall_name, kernel.syscall_args, kernel.wchan) == (
        "read",
        (5,),
        "anon_pipe_read",
    )
    assert [f.target for f in filled.snapshots[0].processes[0].open_files] == ["pipe:[77]"]


def test_a_thread_that_ran_in_between_or_runs_keeps_its_hidden_wait() -> None:
    for bundle, own in (
        (_hidden(cpu=1.30), _own(cpu=1.23)),  # used CPU: it may have left that call
        (_hidden(cpu=1.23, state="R"), _own(cpu=1.23)),
        (_hidden(cpu=1.23), _own(cpu=1.23, state="R")),
    ):
        assert _main_thread(with_self_read_waits(bundle, {4242: own})).syscall_name is None


def test_descriptors_that_proc_listed_are_kept() -> None:
    listed = b.process(
        4242,
        b.thread(4242, b.frame("prep.py", 9, "main"), cpu=1.23),
        files={5: ("pipe:[99]", "r")},
    )
    filled = with_self_read_waits(b.bundle(listed), {4242: _own(cpu=1.23)})
    assert [f.target for f in filled.snapshots[0].processes[0].open_files] == ["pipe:[99]"]

"""A thread caught in a system call that the name table leaves out (a rename, as the
instrumentation's atomic writes make at a capture) is reported by its number; the report was
refused by its own model before ("syscall: Input should be a valid string"), and the capture of
that node failed (seen in the three-node test)."""

from __future__ import annotations

from hangdoctor.evidence import build as b
from hangdoctor.pipeline import diagnose


def _with_syscall(number: int):
    thread = b.thread(7, b.frame("train.py", 3, "main", code="save(state)"), name="MainThread")
    assert thread.kernel is not None
    kernel = thread.kernel.model_copy(update={"syscall": number, "syscall_name": None})
    return b.bundle(b.process(7, thread.model_copy(update={"kernel": kernel})))


def test_a_syscall_without_a_name_is_reported_by_its_number():
    report = diagnose(_with_syscall(999))
    threads = [t for p in report.processes for t in p.threads]
    assert threads[0].syscall == "syscall 999"


def test_the_rename_of_an_atomic_write_has_its_name():
    from hangdoctor.probes.syscalls import syscall_name

    assert syscall_name(82, "x86_64") == "rename"
    assert syscall_name(316, "x86_64") == "renameat2"

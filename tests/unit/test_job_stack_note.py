"""Where py-spy could not read a process and the job dumped its own stacks (no ptrace), the
report says what those stacks lack, once, in the terminal summary and in report.md."""

from __future__ import annotations

import io
import os

from rich.console import Console

from hangdoctor.capture import from_the_job
from hangdoctor.capture.job_stack_note import job_stack_note, kernel_wait_hidden
from hangdoctor.evidence.model import Bundle, ProbeError
from hangdoctor.pipeline import diagnose
from hangdoctor.report.render_markdown import render_markdown
from hangdoctor.report.render_terminal import render_terminal
from tests.conftest import FIXTURES

RECORDED = FIXTURES / "torchrun_extra_collective.run.evidence.json"


def _without_py_spy(bundle: Bundle) -> tuple[Bundle, dict]:
    """The recorded bundle as py-spy refused would leave it: no stacks sampled, a permission
    error per process; and the stacks the job itself would write, by pid."""
    first = bundle.snapshots[0]
    own = {
        p.pid: {t.tid: t.python for t in p.threads if t.python is not None}
        for p in first.processes
        if p.stacks_sampled
    }
    bare = tuple(
        p.model_copy(
            update={
                "stacks_sampled": False,
                "threads": tuple(t.model_copy(update={"python": None}) for t in p.threads),
            }
        )
        for p in first.processes
    )
    refused = tuple(
        ProbeError(probe="py-spy", pid=pid, kind="permission", message="Permission denied")
        for pid in own
    )
    first = first.model_copy(update={"processes": bare})
    return bundle.model_copy(update={"snapshots": (first,), "errors": refused}), own


def test_stacks_from_the_job_come_with_what_they_lack(monkeypatch, tmp_path):
    bundle, own = _without_py_spy(Bundle.model_validate_json(RECORDED.read_text()))
    assert own, "the recording has Python processes"
    monkeypatch.setattr(from_the_job, "request_stacks", lambda status_dir, pids: own)
    monkeypatch.setattr(from_the_job, "kernel_wait_hidden", lambda pid: True)
    patched = from_the_job.stacks_from_the_job(bundle, tmp_path, None)
    note = patched.errors[0]
    assert (note.probe, note.pid, note.kind) == ("stacks", None, "unavailable")
    assert [e.probe for e in patched.errors[1:]] == ["py-spy"] * len(own)
    report = diagnose(patched)

    markdown = render_markdown(report)
    problems = markdown.split("## Capture problems", 1)[1].split("\n## ", 1)[0]
    pids = ", ".join(str(pid) for pid in sorted(own))
    assert f"- stacks: unavailable: py-spy could not read {len(own)} processes (pid {pids})" in (
        problems
    )
    assert "no local variables" in problems and "wait channels" in problems
    assert "pid None" not in markdown

    out = io.StringIO()
    render_terminal(report, Console(file=out, width=200, color_system=None), "/tmp/r/hang-1")
    summary = out.getvalue()
    assert f"capture: stacks: py-spy could not read {len(own)} processes (pid {pids})" in summary
    assert "pid None" not in summary


def test_the_note_counts_and_lists_the_processes():
    one = job_stack_note([42], kernel_hidden=False)
    assert one.message.startswith("py-spy could not read 1 process (pid 42): its Python stack")
    assert "/proc" not in one.message
    assert one.help is not None and "SYS_PTRACE" in one.help
    two = job_stack_note({9, 3}, kernel_hidden=True)
    assert "2 processes (pid 3, 9)" in two.message and "/proc hides" in two.message


def test_a_readable_or_gone_process_does_not_hide_its_wait():
    assert kernel_wait_hidden(os.getpid()) is False
    assert kernel_wait_hidden(2**22 + 1) is False  # above pid_max's default: no such process

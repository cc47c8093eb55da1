"""A job that waits on a process outside its tree (issue 27): the capture finds the process
that holds the other end of the pipe the job reads, though it is no descendant of the job, and
the report names it; `dump` twice on the unchanged job gives one answer."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap

import pytest

from tests.conftest import dump, kill_tree

_DAEMON = "import time\ntime.sleep(300)  # holds the pipe's write end, writes nothing\n"
_JOB = textwrap.dedent(
    """
    import os, sys
    fd = int(sys.argv[1])
    print("reading", flush=True)
    os.read(fd, 1)  # waits for the daemon
    """
)


@pytest.fixture
def job_and_daemon(tmp_path):
    """A job reading a pipe whose only writer is a process started apart from it; both are
    always killed."""
    read, write = os.pipe()
    daemon_file = tmp_path / "daemon.py"
    daemon_file.write_text(_DAEMON)
    job_file = tmp_path / "job.py"
    job_file.write_text(_JOB)
    daemon = subprocess.Popen(
        [sys.executable, str(daemon_file)], pass_fds=(write,), start_new_session=True
    )
    job = subprocess.Popen(
        [sys.executable, str(job_file), str(read)],
        pass_fds=(read,),
        stdout=subprocess.PIPE,
        start_new_session=True,
    )
    os.close(read)
    os.close(write)
    try:
        assert job.stdout is not None and job.stdout.readline() == b"reading\n"
        yield job, daemon
    finally:
        kill_tree(job)
        kill_tree(daemon)


def test_the_report_names_the_process_outside_the_tree_that_holds_the_pipe(
    job_and_daemon, tmp_path
):
    job, daemon = job_and_daemon
    report, done = dump(job.pid, tmp_path / "one")
    assert done.returncode == 1, done.stderr
    roles = {p["pid"]: p["role"] for p in report["processes"]}
    assert roles.get(daemon.pid) == "other"  # captured, and not called part of the job
    first = report["findings"][0]
    assert first["category"] == "process.blocked_io"
    assert first["culprit"]["pid"] == daemon.pid
    assert first["culprit"]["location"]["file"].endswith("daemon.py")
    assert first["culprit"]["location"]["line"] == 2
    assert any(r["pid"] == job.pid for r in first["related"])

    again, _ = dump(job.pid, tmp_path / "two")
    assert [(f["id"], f["category"]) for f in again["findings"]] == [
        (f["id"], f["category"]) for f in report["findings"]
    ]


_ASYNC_IDLE = (
    "import asyncio\n"
    "async def main():\n"
    "    await asyncio.Event().wait()  # nothing will set it\n"
    "asyncio.run(main())\n"
)


def test_runs_own_output_relay_is_never_taken_for_a_process_the_job_left(tmp_path):
    """A job started with its standard input a pipe, whose event loop polls: every pipe it
    reads may be the one it waits on, and `run`'s output relay holds the same standard input.
    The relay is hangdoctor's own: it is not in the capture, nor named."""
    report_dir = tmp_path / "report"
    done = subprocess.run(
        [
            *(sys.executable, "-m", "hangdoctor", "run", "--hang-timeout", "2"),
            *("--on-hang", "kill", "--report-dir", str(report_dir)),
            *("--", sys.executable, "-c", _ASYNC_IDLE),
        ],
        stdin=subprocess.PIPE,
        capture_output=True,
        timeout=120,
        check=False,
    )
    assert done.returncode == 124, done.stderr
    report = (report_dir / "report.md").read_text()
    evidence = (report_dir / "evidence.json").read_text()
    assert "hd-relay" not in evidence and "hd-relay" not in report
    assert "asyncio tasks await" in report  # the loop's own wait is what is explained

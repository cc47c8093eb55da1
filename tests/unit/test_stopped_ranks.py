"""Where each rank was when the launcher stopped it (SIGTERM) after a peer's collective timed
out: read from faulthandler's report (recorded from a real mp.spawn job) into the timeout's
culprit line."""

from __future__ import annotations

from pathlib import Path

from hangdoctor.analysis.job import JobView
from hangdoctor.analysis.tracebacks import main_thread_stack
from hangdoctor.evidence.model import Bundle, FaultLog, JobRecord, ProgressStatus
from hangdoctor.rules.engine import run_rules
from hangdoctor.rules.finding import Finding

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures"
FIXTURE = FIXTURES / "stopped_rank0_download.faulthandler.txt"
STOPPED_IN_DOWNLOAD = FIXTURE.read_text()
# The same process, stopped while it waited in a barrier.
SITE = "/opt/venv/lib/python3.11/site-packages"
STOPPED_IN_BARRIER = f"""Current thread 0x00007f62d1e5bb80 (most recent call first):
  File "{SITE}/torch/distributed/distributed_c10d.py", line 4873 in barrier
  File "{SITE}/torch/distributed/c10d_logger.py", line 81 in wrapper
  File "/home/ml/speech/train.py", line 52 in run
  File "<string>", line 1 in <module>
"""
GLOO_TIMEOUT = (
    "RuntimeError: [/__w/pytorch/pytorch/third_party/gloo/gloo/transport/tcp/"
    "unbound_buffer.cc:129] Timed out waiting 2000ms for send operation to complete"
)


def _bundle(output: list[str], stopped: dict[int, str], when: str = "sigterm") -> Bundle:
    progress = tuple(ProgressStatus(pid=100 + rank, rank=rank, updated_at=0.0) for rank in (0, 1))
    record = JobRecord(
        started_at=0.0,
        exit_code=1,
        output_tail=tuple(output),
        progress=progress,
        stopped=tuple(
            FaultLog(pid=100 + rank, text=text, when=when) for rank, text in stopped.items()
        ),
    )
    return Bundle(tool_version="test", created_at=0.0, target_pid=1, job=record)


def _timeout_finding(bundle: Bundle) -> Finding:
    findings = [f for f in run_rules(JobView(bundle)).findings if f.id == "HD350"]
    assert findings, "no collective-timeout finding"
    return findings[0]


def test_the_main_thread_is_read_even_when_the_signal_landed_on_another():
    text = STOPPED_IN_DOWNLOAD.replace("Current thread", "Thread").replace(
        "Thread 0x00007f62afc146c0", "Current thread 0x00007f62afc146c0", 1
    )
    frames = main_thread_stack(text)
    assert frames[0].function == "download_dataset"


def test_the_rank_stopped_outside_collectives_is_the_one_the_peer_waited_for():
    """mp.spawn prints no rank on the timeout line; rank 0 was stopped in its download."""
    root = _timeout_finding(
        _bundle(
            ["-- Process 1 terminated with the following error:", GLOO_TIMEOUT],
            {0: STOPPED_IN_DOWNLOAD},
        )
    )
    assert root.culprit is not None and root.culprit.rank == 0
    assert root.culprit.location is not None
    assert (root.culprit.location.function, root.culprit.location.line) == ("download_dataset", 26)
    assert any("SIGTERM" in line for line in root.evidence)


def test_a_rank_stopped_inside_a_collective_is_not_blamed():
    root = _timeout_finding(_bundle([GLOO_TIMEOUT], {0: STOPPED_IN_BARRIER}))
    assert root.culprit is None or root.culprit.location is None


def test_the_late_rank_named_by_the_log_gets_its_line():
    """torchrun prefixes lines with the rank: rank 1 gave up, so rank 0 is the late one."""
    root = _timeout_finding(
        _bundle(["[rank0]: downloading", f"[rank1]: {GLOO_TIMEOUT}"], {0: STOPPED_IN_DOWNLOAD})
    )
    assert root.culprit is not None and root.culprit.rank == 0
    assert root.culprit.location is not None and root.culprit.location.line == 26


def test_a_late_rank_found_inside_the_collective_is_said_to_have_arrived_late():
    """Rank 1 gave up; rank 0, named by the log, had reached the barrier by the time it was
    stopped: the report must not call that line the work it was busy with."""
    root = _timeout_finding(
        _bundle(["[rank0]: downloading", f"[rank1]: {GLOO_TIMEOUT}"], {0: STOPPED_IN_BARRIER})
    )
    assert root.culprit is not None and root.culprit.rank == 0
    assert root.culprit.location is not None and root.culprit.location.line == 52
    assert "only after the others had given up" in root.explanation


def test_a_stack_asked_for_at_the_timeout_says_so():
    """Lightning ends the other ranks with SIGKILL: their stacks come from the moment the
    timeout was printed, and the evidence says that, not SIGTERM."""
    root = _timeout_finding(
        _bundle([f"[rank1]: {GLOO_TIMEOUT}"], {0: STOPPED_IN_DOWNLOAD}, when="peer_timeout")
    )
    assert root.culprit is not None and root.culprit.location is not None
    assert any(
        "collective timed out" in line and "download_dataset" in line for line in root.evidence
    )
    assert not any("SIGTERM" in line for line in root.evidence)


def test_a_thread_that_died_is_named_even_after_a_stdout_line_without_its_newline():
    """stdout and stderr share the job's output: threading's header may follow a step line."""
    from hangdoctor.analysis.tracebacks import tracebacks

    lines = [
        "step 10 loss 1.1131Exception in thread Thread-1 (_fill):",
        "Traceback (most recent call last):",
        '  File "/home/ml/train.py", line 34, in _fill',
        "    batch.append(json.loads(line))",
        "json.decoder.JSONDecodeError: Unterminated string",
    ]
    [raised] = tracebacks(lines)
    assert raised.thread == "Thread-1 (_fill)"
    assert raised.location is not None and raised.location.line == 34


def test_a_thread_that_died_is_known_by_its_traceback_when_the_header_is_split():
    """stderr's header can be split by stdout lines written between its pieces."""
    from hangdoctor.analysis.tracebacks import tracebacks

    lines = [
        "Exception in thread step 10 loss 1.0999",
        "step 11 loss 1.1077",
        "Thread-1 (_fill):",
        "Traceback (most recent call last):",
        '  File "/usr/lib/python3.11/threading.py", line 1045, in _bootstrap_inner',
        "    self.run()",
        '  File "/usr/lib/python3.11/threading.py", line 982, in run',
        "    self._target(*self._args, **self._kwargs)",
        '  File "/home/ml/train.py", line 34, in _fill',
        "    batch.append(json.loads(line))",
        "json.decoder.JSONDecodeError: Expecting ',' delimiter",
    ]
    [raised] = tracebacks(lines)
    assert raised.thread == "thread running _fill()"
    assert raised.location is not None and raised.location.line == 34
    [main] = tracebacks(lines[3:4] + lines[8:])
    assert main.thread is None  # a traceback of the main thread ended no thread


def test_a_traceback_with_stdout_lines_inside_is_still_read():
    """stderr's traceback arrives in pieces; the job's stdout lines land between them."""
    from hangdoctor.analysis.tracebacks import tracebacks

    lines = [
        "Exception in thread Thread-1 (_fill):",
        "Traceback (most recent call last):",
        '  File "/usr/lib/python3.11/threading.py", line 1045, in _bootstrap_inner',
        "    self.run()",
        '  File "/home/ml/train.py", line 34, in _fill',
        "    batch.append(json.loads(line))",
        "                 ^^^step 10 loss 1.1324",
        "step 11 loss 1.1138",
        "epoch: 3",
        "^^^^^^^^^^^^",
        '  File "/usr/lib/python3.11/json/decoder.py", line 353, in raw_decode',
        "    obj, end = self.scan_once(s, idx)",
        "json.decoder.JSONDecodeError: Expecting ',' delimiter",
    ]
    [raised] = tracebacks(lines)
    assert raised.type == "json.decoder.JSONDecodeError"
    assert raised.thread == "Thread-1 (_fill)"
    assert raised.location is not None and raised.location.line == 34


def test_stdout_lines_right_after_a_tracebacks_header_are_skipped_too():
    """A child's stderr header can arrive before the stdout lines it printed first."""
    from hangdoctor.analysis.tracebacks import tracebacks

    lines = [
        "label 0",
        "Traceback (most recent call last):",
        "label 1",
        "label 0",
        '  File "/home/ml/labels.py", line 19, in read_label',
        '    return record["label"]',
        "KeyError: 'label'",
        "",
        "The above exception was the direct cause of the following exception:",
        "",
        "Traceback (most recent call last):",
        '  File "/home/ml/labels.py", line 21, in read_label',
        '    raise ValueError(f"bad record {record!r}") from missing',
        "ValueError: bad record {'x': 0.75}",
    ]
    first, second = tracebacks(lines)
    assert (first.type, first.frames[0].line) == ("KeyError", 19)
    assert second.origin is first


def test_a_log_line_that_only_mentions_a_traceback_opens_nothing_for_long():
    from hangdoctor.analysis.tracebacks import tracebacks

    lines = [
        "Traceback (most recent call last):",
        *(f"step {i}" for i in range(20)),
        "ValueError: later, and unrelated",
    ]
    assert tracebacks(lines) == []

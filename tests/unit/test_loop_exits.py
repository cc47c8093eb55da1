"""How a rank that left first got out of its training loop: the loop around its last
synchronisation (recorded by the instrumentation) and that loop's early exits, from the source."""

from __future__ import annotations

import textwrap
from pathlib import Path

from hangdoctor.analysis.job import JobView
from hangdoctor.evidence.model import Bundle, Frame, JobRecord, ProgressStatus
from hangdoctor.probes.progress import with_sync_source
from hangdoctor.probes.sources import loop_exits_at
from hangdoctor.rules.distributed.rank_exited_log import _SUMMARY
from hangdoctor.rules.engine import run_rules

TRAIN = textwrap.dedent("""\
    def train(model, loader, stopper, epochs):
        for epoch in range(epochs):
            for x, y in loader:
                loss = model(x, y)
                if loss is None:
                    break
                loss.backward()
            def report():
                return epoch
            if stopper.should_stop(loss):
                break
        return model
""")
BACKWARD_LINE = 7


def test_the_outer_loops_break_and_its_condition_are_found(tmp_path: Path):
    path = tmp_path / "train.py"
    path.write_text(TRAIN)
    exits = loop_exits_at(str(path), BACKWARD_LINE)
    # the inner loop's break only ends an epoch, and report()'s return is its own
    assert [(e.line, e.code, e.condition) for e in exits] == [
        (11, "break", "stopper.should_stop(loss)")
    ]
    assert loop_exits_at(str(path), 12) == ()  # not in a loop


def _job(path: Path, output: list[str]) -> Bundle:
    early = with_sync_source(
        ProgressStatus(
            pid=201,
            rank=1,
            updated_at=5.0,
            exiting_at=5.0,
            last_sync_at=((str(path), BACKWARD_LINE, "train"), (str(path), 40, "<module>")),
        )
    )
    stayed = ProgressStatus(pid=200, rank=0, updated_at=6.0)
    record = JobRecord(
        started_at=0.0, exit_code=1, output_tail=tuple(output), progress=(stayed, early)
    )
    return Bundle(tool_version="test", created_at=0.0, target_pid=1, job=record)


def test_the_rank_that_left_first_points_at_the_break_it_took(tmp_path: Path):
    path = tmp_path / "train.py"
    path.write_text(TRAIN)
    bundle = _job(
        path,
        [
            "[rank0]: Traceback (most recent call last):",
            f'[rank0]:   File "{path}", line {BACKWARD_LINE}, in train',
            "[rank0]:     loss.backward()",
            "[rank0]: RuntimeError: [../third_party/gloo/gloo/transport/tcp/pair.cc:534] "
            "Connection closed by peer [127.0.0.1]:2365",
            *_SUMMARY.format(rank=0, code=1, cause="To enable traceback see: ...").splitlines(),
        ],
    )
    status = bundle.job.progress[1] if bundle.job else None
    assert status is not None and status.last_sync and isinstance(status.last_sync[0], Frame)
    root = run_rules(JobView(bundle)).findings[0]
    assert root.category.value == "distributed.rank_exited"
    assert root.culprit is not None and root.culprit.rank == 1
    assert root.culprit.location is not None
    assert (root.culprit.location.line, root.culprit.location.code) == (11, "break")
    assert any("stopper.should_stop(loss)" in line for line in root.evidence)


def test_the_rank_that_left_first_with_an_error_of_its_own_is_named_at_its_raise(tmp_path: Path):
    """Both ranks failed within an instant; torchrun's summary put rank 0 first, whose error is
    only the lost connection, while rank 1 (gone first) raised its own error: that raise is the
    cause, whatever order the summary took (u_ddp_modality_router came out either way)."""
    path = tmp_path / "train.py"
    path.write_text(TRAIN)
    bundle = _job(
        path,
        [
            "[rank1]: Traceback (most recent call last):",
            f'[rank1]:   File "{path}", line 4, in train',
            "[rank1]:     loss = model(x, y)",
            "[rank1]: RuntimeError: Expected to have finished reduction in the prior iteration "
            "before starting a new one.",
            "[rank0]: Traceback (most recent call last):",
            f'[rank0]:   File "{path}", line {BACKWARD_LINE}, in train',
            "[rank0]:     loss.backward()",
            "[rank0]: RuntimeError: [../third_party/gloo/gloo/transport/tcp/pair.cc:534] "
            "Connection closed by peer [127.0.0.1]:2365",
            *_SUMMARY.format(rank=0, code=1, cause="To enable traceback see: ...").splitlines(),
        ],
    )
    root = run_rules(JobView(bundle)).findings[0]
    assert root.category.value == "process.exception"  # its own exception, on its rank
    assert root.culprit is not None and root.culprit.rank == 1
    assert root.culprit.location is not None and root.culprit.location.line == 4
    assert "Expected to have finished reduction" in root.title + root.explanation
    assert not any("no error of its own" in line for line in (root.explanation, *root.evidence))

"""Log files from outside (`hangdoctor analyze train.log dmesg.txt`): whatever bytes they hold
(300 kB lines, NULs, bad UTF-8, huge numbers in familiar messages), a one-line BadInputError or a
report, never a crash; and a binary file is never mistaken for a healthy log."""

from __future__ import annotations

from pathlib import Path

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from hangdoctor.errors import BadInputError
from hangdoctor.evidence.logfiles import read_logs
from hangdoctor.pipeline import Context, Mode, diagnose
from hangdoctor.report.render_markdown import render_markdown
from tests.fuzz.strategies import HOSTILE_LINES

_SETTINGS = settings(
    max_examples=500,
    deadline=None,
    suppress_health_check=[
        HealthCheck.too_slow,
        HealthCheck.function_scoped_fixture,
        HealthCheck.data_too_large,
    ],
)


def _analyze(tmp_path: Path, *contents: bytes) -> None:
    paths = []
    for index, content in enumerate(contents):
        path = tmp_path / f"log-{index}.txt"
        path.write_bytes(content)
        paths.append(path)
    try:
        bundle, _ = read_logs(paths)
    except BadInputError as error:
        assert "\n" not in error.message
        return
    render_markdown(diagnose(bundle, Context(mode=Mode.LOGS)))


@_SETTINGS
@given(lines=st.lists(HOSTILE_LINES, min_size=1, max_size=8))
def test_hostile_lines(tmp_path, lines):
    _analyze(tmp_path, b"\n".join(lines))


@_SETTINGS
@given(training=st.lists(HOSTILE_LINES, max_size=4), kernel=st.lists(HOSTILE_LINES, max_size=4))
def test_hostile_lines_mixed_with_real_messages(tmp_path, training, kernel):
    real_output = [
        b"step 10 loss 2.31",
        b"[rank1]: RuntimeError: NCCL communicator was aborted",
        b"torch.distributed.elastic.multiprocessing.errors.ChildFailedError:",
    ]
    real_kernel = [
        b"[ 1234.567890] NVRM: Xid (PCI:0000:3b:00): 79, pid=1234, GPU has fallen off the bus.",
        b"[ 1240.000001] Out of memory: Killed process 4242 (python)",
    ]
    _analyze(tmp_path, b"\n".join(real_output + training), b"\n".join(real_kernel + kernel))


@_SETTINGS
@given(data=st.binary(min_size=1, max_size=4096))
def test_arbitrary_bytes(tmp_path, data):
    _analyze(tmp_path, data)

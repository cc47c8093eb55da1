"""Tracebacks are found whatever the launcher puts before each line: torchrun's `[rank1]:`,
Ray's `(RayTrainWorker pid=N)` with its ANSI colours, mpirun's `[1,0]<stderr>:`, `srun --label`,
logging's and `kubectl logs --timestamps`' timestamps. The lines are in the formats those tools
print (Ray's as quoted in https://github.com/ray-project/ray/issues/31828 and
https://github.com/ray-project/ray/issues/23405)."""

from __future__ import annotations

import pytest

from hangdoctor.analysis.logs import line_rank, split_prefix
from hangdoctor.analysis.tracebacks import tracebacks

USER = "/home/ml/proj/train.py"
TORCH = "/opt/venv/lib/python3.11/site-packages/torch/nn/modules/module.py"


def traceback(prefix: str) -> list[str]:
    return [
        f"{prefix}Traceback (most recent call last):",
        f'{prefix}  File "{USER}", line 88, in train_func',
        f"{prefix}    out = model(batch)",
        f'{prefix}  File "{TORCH}", line 1736, in _call_impl',
        f"{prefix}    return forward_call(*args, **kwargs)",
        f"{prefix}ValueError: Expected input batch_size (16) to match target batch_size (8).",
    ]


@pytest.mark.parametrize(
    ("prefix", "rank"),
    [
        ("", None),
        ("[rank1]: ", 1),
        ("[default1]:", 1),
        ("\x1b[2m\x1b[36m(RayTrainWorker pid=1942, ip=100.97.252.234)\x1b[0m ", None),
        ("(RayTrainWorker pid=1942) ", None),
        ("(pid=2724) ", None),
        ("[1,1]<stderr>:", 1),
        ("1: ", 1),
        ("2026-12-01T10:00:00.123456789Z ", None),
        ("2026-12-01 10:00:00,123 - ERROR - ", None),
        ("[2026-12-01 10:00:00,123][ERROR] ", None),
    ],
)
def test_a_traceback_behind_a_prefix_is_found(prefix, rank):
    [raised] = tracebacks(["epoch 1", *traceback(prefix), "done"])
    assert raised.type == "ValueError"
    assert raised.message.startswith("Expected input batch_size (16)")
    assert raised.location is not None
    assert (raised.location.file, raised.location.line) == (USER, 88)
    assert raised.location.code == "out = model(batch)"
    assert raised.rank == rank


def test_interleaved_workers_keep_their_own_tracebacks():
    one, two = (traceback(f"(RayTrainWorker pid={pid}) ") for pid in (11, 12))
    mixed = [line for pair in zip(one, two, strict=True) for line in pair]
    found = tracebacks(mixed)
    assert [r.stream for r in found] == ["pid 11@", "pid 12@"]
    assert all(r.location is not None and r.location.line == 88 for r in found)


def test_ray_repeated_lines_and_logging_headers():
    line = "(RayTrainWorker pid=5) ValueError: bad [repeated 3x across cluster]"
    assert split_prefix(line).text == "ValueError: bad"
    # logging.exception: only the message line carries the prefix; the traceback follows it.
    logged = ["2026-12-01 10:00:00,123 - trainer - ERROR - step failed", *traceback("")]
    assert [r.type for r in tracebacks(logged)] == ["ValueError"]


def test_plain_lines_are_left_alone():
    for line in (
        '  File "x.py", line 3, in f',
        "100 steps done",
        "(the loss) went up",
        "[W socket.cpp:601] warning",
    ):
        assert split_prefix(line).text == line
    assert line_rank("[rank3]:[E ProcessGroupNCCL.cpp:1316] x") == 3
    assert line_rank("plain") is None


def test_a_chained_exception_keeps_its_cause():
    lines = [
        *traceback(""),
        "",
        "During handling of the above exception, another exception occurred:",
        "",
        "Traceback (most recent call last):",
        f'  File "{USER}", line 90, in train_func',
        "    raise RuntimeError('step failed')",
        "RuntimeError: step failed",
    ]
    first, second = tracebacks(lines)
    assert second.cause is first and second.root is first
    assert first.cause is None


def test_a_traceback_split_by_an_unfinished_line_of_the_other_stream():
    """`print()` writes its text and its newline apart: a child's traceback on stderr can land
    between them, so its header or a frame line follows the parent's unfinished stdout line,
    in a terminal as in hangdoctor's log (a tokeniser process that died on a bad byte)."""
    mp = "/usr/lib/python3.11/multiprocessing/process.py"
    lines = [
        "Process Process-4:",
        "Traceback (most recent call last):",
        f'  File "{mp}", line 314, in _bootstrap',
        "    self.run()",
        f'  File "{mp}", line 108, in run',
        "    self._target(*self._args, **self._kwargs)",
        f'tokenizing 6 shards  File "{USER}", line 40, in tokenize_shard',
        '    ids.append(tokenize(raw.decode("utf-8")))',
        "                        ^^^^^^^^^^^^^^^^^^^",
        "UnicodeDecodeError: 'utf-8' codec can't decode byte 0xff in position 20",
        "",
        "shard 0 done (200 rows)",
    ]
    [raised] = tracebacks(lines)
    assert raised.type == "UnicodeDecodeError"
    assert raised.in_user_code
    assert raised.location is not None
    assert (raised.location.file, raised.location.line) == (USER, 40)
    assert raised.location.code == 'ids.append(tokenize(raw.decode("utf-8")))'
    assert raised.frames[-1].function == "_bootstrap"

    behind_header = ["epoch 3 loss 0.41Traceback (most recent call last):", *traceback("")[1:]]
    [raised] = tracebacks(behind_header)
    assert raised.location is not None and raised.location.line == 88


def test_a_printed_file_line_outside_a_traceback_is_not_a_frame():
    lines = ['copying  File "data.csv", line 3, in shard', "ValueError: not raised"]
    assert tracebacks(lines) == []


def test_anomaly_modes_forward_trace_split_by_a_stdout_line_keeps_the_users_frame():
    from hangdoctor.analysis.tracebacks import forward_trace

    lines = [
        "UserWarning: Error detected in DivBackward0. Traceback of forward call that caused "
        "the error:",
        f'step 12 loss 0.31  File "{USER}", line 51, in smape',
        "    return (pred - y).abs() / (pred.abs() + y.abs())",
        "RuntimeError: Function 'DivBackward0' returned nan values in its 0th output.",
    ]
    [frame] = forward_trace(lines)
    assert (frame.file, frame.line) == (USER, 51)
    assert frame.code == "return (pred - y).abs() / (pred.abs() + y.abs())"

"""A NaN found by autograd's anomaly mode is named at the forward call that made it (the trace
anomaly mode prints before the backward pass fails), not only as a log line."""

from __future__ import annotations

from hangdoctor.analysis.job import JobView
from hangdoctor.evidence.logfiles import log_bundle
from hangdoctor.rules.algorithm.nonfinite_log import NonFiniteFromLog

_ANOMALY = [
    "/opt/venv/lib/python3.11/site-packages/torch/autograd/graph.py:829: UserWarning: Error "
    "detected in DivBackward0. Traceback of forward call that caused the error:",
    '  File "/home/alice/project/train.py", line 61, in <module>',
    "    loss = smape(pred, target)",
    '  File "/home/alice/project/metrics.py", line 12, in smape',
    "    return (num / den).mean()",
    " (Triggered internally at /pytorch/torch/csrc/autograd/python_anomaly_mode.cpp:122.)",
    "  return Variable._execution_engine.run_backward(",
    "Traceback (most recent call last):",
    '  File "/home/alice/project/train.py", line 62, in <module>',
    "    loss.backward()",
    '  File "/opt/venv/lib/python3.11/site-packages/torch/_tensor.py", line 625, in backward',
    "    torch.autograd.backward(",
    "RuntimeError: Function 'DivBackward0' returned nan values in its 0th output.",
]


def _finding(lines: list[str]):
    return next(iter(NonFiniteFromLog().check(JobView(log_bundle(lines)))))


def test_the_culprit_is_the_forward_operation_anomaly_mode_names():
    finding = _finding(_ANOMALY)
    assert finding.culprit is not None and finding.culprit.location is not None
    assert finding.culprit.location.file.endswith("metrics.py")
    assert finding.culprit.location.line == 12
    assert any("metrics.py:12" in line for line in finding.evidence)


def test_without_the_forward_trace_the_backward_line_is_named():
    finding = _finding(_ANOMALY[7:])
    assert finding.culprit is not None and finding.culprit.location is not None
    assert finding.culprit.location.line == 62

"""Failures read from the log: a broken connection after a peer failed of its own exception is
that failure's consequence (stated, and not an error of its own beside it); a known message of
PyTorch's (DDP's unused parameters) brings the advice that fits it."""

from __future__ import annotations

from hangdoctor.analysis.job import JobView
from hangdoctor.evidence.logfiles import log_bundle
from hangdoctor.rules.distributed.transport_failure_log import TransportFailure

CLOSED = (
    "[rank0]: RuntimeError: [../third_party/gloo/gloo/transport/tcp/pair.cc:534] "
    "Connection closed by peer [127.0.0.1]:3222"
)
RAISED = (
    "[rank1]: Traceback (most recent call last):",
    '[rank1]:   File "/home/ml/train.py", line 67, in forward',
    "[rank1]:     x = self.tokens(tokens) + self.positions[:, :length]",
    "[rank1]: RuntimeError: The size of tensor a (95) must match the size of tensor b",
)


def _finding(lines: list[str]):
    (finding,) = TransportFailure().check(JobView(log_bundle(lines)))
    return finding


def test_a_peer_that_raised_first_makes_the_broken_connection_a_warning_naming_it():
    finding = _finding([*RAISED, CLOSED])
    assert finding.severity == "warning"
    assert finding.culprit is not None and finding.culprit.rank == 1
    assert "failed first" in finding.title


def test_a_broken_connection_alone_stays_an_error():
    assert _finding([CLOSED]).severity == "error"
    assert _finding([CLOSED, *RAISED]).severity == "error"  # raised after: not the cause


def test_ddps_unused_parameter_error_gets_advice_about_the_branch():
    from hangdoctor.rules.engine import run_rules

    lines = [
        "[rank0]: Traceback (most recent call last):",
        '[rank0]:   File "/home/ml/train.py", line 62, in main',
        "[rank0]:     logits = model(features)",
        "[rank0]: RuntimeError: Expected to have finished reduction in the prior iteration "
        "before starting a new one. This error indicates that your module has parameters "
        "that were not used in producing loss.",
    ]
    finding = run_rules(JobView(log_bundle(lines))).findings[0]
    assert finding.category.value == "process.exception"  # rank 0's own exception
    assert finding.culprit is not None and finding.culprit.rank == 0
    assert finding.culprit.location is not None and finding.culprit.location.line == 62
    assert any("find_unused_parameters=True" in fix for fix in finding.fixes)

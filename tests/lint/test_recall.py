"""The recall study's cases as tests (tests/lint/recall/): every positive, reproduced from a
public bug report or fixing commit or written as a textbook variant, is reported at exactly
the lines it marks, with nothing else; every fixed version is quiet.

The few positives the linter still misses are listed in KNOWN_MISSES with the reason; they
are strict xfails, so the day a rule learns to find one, the list must shrink.
"""

from __future__ import annotations

import pytest

from hangdoctor.lint.config import LintConfig
from hangdoctor.lint.runner import Linter
from tests.lint.recall.study import KINDS, Case, discover, run_case

CASES = discover()

#: case name -> why the linter does not find it (see benchmarks/LINT_STUDY.md).
KNOWN_MISSES = {
    "HL101/particleflow_ddp_forward_rank0": "a DDP forward is a collective only when the module has buffers to broadcast (batch "
    "norm); nothing in this reproduction shows any, and flagging every rank-0 forward "
    "through DDP would flag nanoGPT's evaluation, which works",
    "HL102/mmaudio_extract_latents_duplicate": "a distributed inference script with no DDP/FSDP wrapper: HL102 keys on the wrapper",
    "HL201/heldout_pet_encode_no_truncation": "held out: a preprocessor object called once per example in a list comprehension is "
    "not recognised as the input pipeline",
    "HL203/pytorch_1355_wandb_threads": "the threads are started inside wandb and tensorboard, not by the module's code",
    "HL601/candle_index_select_ids": "the index is read from memory (ids[i]); HL601 follows thread indices only",
    "HL601/cudaforengineers_stencil_neighbours": "the bound covers i but not i - 1 / i + 1; offsets are not followed (too many "
    "interleaved layouts like out[2 * i + 1] would be misread)",
}


def _param(case: Case) -> object:
    marks = []
    if case.name in KNOWN_MISSES:
        marks.append(pytest.mark.xfail(reason=KNOWN_MISSES[case.name], strict=True))
    return pytest.param(case, id=case.name, marks=marks)


@pytest.fixture(scope="module")
def linter() -> Linter:
    return Linter(LintConfig())


@pytest.mark.parametrize("case", [_param(c) for c in CASES if c.kind != "fixed"])
def test_positive_is_found(case: Case, linter: Linter) -> None:
    outcome = run_case(case, linter)
    missing = sorted(set(case.expected) - outcome.hits)
    assert not missing, f"not reported: {missing}"
    assert not outcome.extra, [f"{f.rule_id}:{f.line} {f.message}" for f in outcome.extra]


@pytest.mark.parametrize("case", [_param(c) for c in CASES if c.kind == "fixed"])
def test_fixed_version_is_quiet(case: Case, linter: Linter) -> None:
    outcome = run_case(case, linter)
    assert not outcome.findings, [f"{f.rule_id}:{f.line} {f.message}" for f in outcome.findings]


def test_every_case_is_well_formed() -> None:
    assert len(CASES) >= 100
    for case in CASES:
        assert case.kind in KINDS
        assert case.path.parent.name == case.rule, case.name
        assert (case.path / "requirements.txt").is_file(), f"{case.name}: not its own project"
        if case.kind == "real":
            assert case.source and case.source.startswith("https://github.com/"), case.name
        if case.kind != "fixed":
            assert case.expected, f"{case.name}: a positive marks its lines"
            assert {rule for _, _, rule in case.expected} == {case.rule}, case.name
        else:
            assert not case.expected, case.name


def test_at_least_five_real_positives_per_rule() -> None:
    rules = {c.rule for c in CASES}
    for rule in sorted(rules):
        real = [c for c in CASES if c.rule == rule and c.kind == "real"]
        assert len(real) >= 5, f"{rule}: {len(real)} real positives"

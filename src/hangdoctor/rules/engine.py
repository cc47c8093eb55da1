"""Run the rules over a bundle and rank what they find, most likely root cause first."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from hangdoctor.analysis.job import JobView
from hangdoctor.evidence.model import Bundle
from hangdoctor.rules.base import Rule
from hangdoctor.rules.finding import Finding
from hangdoctor.rules.registry import ALL_RULES


@dataclass(frozen=True)
class Diagnosis:
    """Ranked findings, and the rules that failed (a rule bug must not hide the others)."""

    findings: tuple[Finding, ...]
    rule_errors: tuple[str, ...] = ()


def _rank_key(finding: Finding, specificity: dict[str, int]) -> tuple:
    return (-finding.severity.weight, -finding.confidence, -specificity.get(finding.id, 0),
            finding.id, finding.title)


def _culprit_key(finding: Finding) -> tuple | None:
    culprit = finding.culprit
    if culprit is None or culprit.pid is None:
        return None
    return (culprit.pid, culprit.tid)


def diagnose(bundle: Bundle, rules: Sequence[type[Rule]] = ALL_RULES) -> Diagnosis:
    """Findings of every rule, ranked; of several findings about one thread, the best stays."""
    job = JobView(bundle)
    found: list[Finding] = []
    errors: list[str] = []
    specificity = {rule.id: rule.specificity for rule in rules}
    for rule in rules:
        try:
            found.extend(rule().check(job))
        except Exception as error:  # noqa: BLE001 - one broken rule must not stop diagnosis
            errors.append(f"{rule.id}: {type(error).__name__}: {error}")
    found.sort(key=lambda f: _rank_key(f, specificity))
    kept: list[Finding] = []
    seen: set[tuple] = set()
    for finding in found:
        key = _culprit_key(finding)
        if key is not None and key in seen:
            continue
        if key is not None:
            seen.add(key)
        kept.append(finding)
    return Diagnosis(findings=tuple(kept), rule_errors=tuple(errors))

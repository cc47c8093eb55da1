"""Run the rules over a bundle and rank what they find, most likely root cause first."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from hangdoctor.analysis.job import JobView
from hangdoctor.evidence.model import Bundle
from hangdoctor.rules.base import Rule
from hangdoctor.rules.finding import Culprit, Finding
from hangdoctor.rules.registry import ALL_RULES


@dataclass(frozen=True)
class Diagnosis:
    """Ranked findings, and the rules that failed (a rule bug must not hide the others)."""

    findings: tuple[Finding, ...]
    rule_errors: tuple[str, ...] = ()


def _rank_key(finding: Finding, specificity: dict[str, int]) -> tuple:
    return (-finding.severity.weight, -finding.confidence, -specificity.get(finding.id, 0),
            finding.id, finding.title)


def _thread_key(culprit: Culprit | None) -> tuple | None:
    return (culprit.pid, culprit.tid) if culprit is not None and culprit.pid is not None else None


def diagnose(bundle: Bundle, rules: Sequence[type[Rule]] = ALL_RULES) -> Diagnosis:
    """Findings of every rule, ranked; a finding whose culprit a better-ranked finding already
    names (as culprit or as a party to it) is dropped."""
    job = JobView(bundle)
    found: list[Finding] = []
    errors: list[str] = []
    specificity = {rule.id: rule.specificity for rule in rules}
    for rule in rules:
        try:
            found.extend(rule().check(job))
        except Exception as error:
            errors.append(f"{rule.id}: {type(error).__name__}: {error}")
    found.sort(key=lambda f: _rank_key(f, specificity))
    kept: list[Finding] = []
    seen: set[tuple] = set()
    for finding in found:
        if _thread_key(finding.culprit) in seen:
            continue  # a better-ranked finding already explains this thread
        seen |= {_thread_key(c) for c in (finding.culprit, *finding.related)} - {None}
        kept.append(finding)
    return Diagnosis(findings=tuple(kept), rule_errors=tuple(errors))

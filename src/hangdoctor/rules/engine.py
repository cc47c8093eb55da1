"""Run the rules over a job's evidence and rank what they find, most likely root cause first."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from hangdoctor.analysis.job import JobView
from hangdoctor.analysis.sink_category import contradicts_sink
from hangdoctor.rules.base import Rule
from hangdoctor.rules.finding import Culprit, Finding
from hangdoctor.rules.registry import ALL_RULES
from hangdoctor.rules.user_code import blames_hangdoctor, in_user_code

_RankKey = tuple[int, bool, float, int, str, str]
_ThreadKey = tuple[int, int | None]


@dataclass(frozen=True)
class Diagnosis:
    """Ranked findings, and the rules that failed (a rule bug must not hide the others)."""

    findings: tuple[Finding, ...]
    rule_errors: tuple[str, ...] = ()


def _rank_key(finding: Finding, specificity: dict[str, int], job: JobView) -> _RankKey:
    """Severity first; then a finding the sink of its wait contradicts goes after one it does
    not (`analysis.sink_category`); then confidence and specificity."""
    parties = [k for c in (finding.culprit, *finding.related) if (k := _party(c))]
    return (
        -finding.severity.weight,
        contradicts_sink(job, finding.category, parties),
        -finding.confidence,
        -specificity.get(finding.id, 0),
        finding.id,
        finding.title,
    )


def _party(culprit: Culprit | None) -> tuple[int, int] | None:
    if culprit is None or culprit.pid is None or culprit.tid is None:
        return None
    return (culprit.pid, culprit.tid)


def _thread_key(culprit: Culprit | None) -> _ThreadKey | None:
    return (culprit.pid, culprit.tid) if culprit is not None and culprit.pid is not None else None


def run_rules(job: JobView, rules: Sequence[type[Rule]] = ALL_RULES) -> Diagnosis:
    """Findings of every rule, ranked; a finding whose culprit a better-ranked finding already
    names (as culprit or as a party to it) is dropped."""
    found: list[Finding] = []
    errors: list[str] = []
    specificity = {rule.id: rule.specificity for rule in rules}
    regular = [rule for rule in rules if not rule.fallback]
    fallbacks = [rule for rule in rules if rule.fallback]
    for group in (regular, fallbacks):
        if group is fallbacks and any(f.severity.is_problem for f in found):
            break  # a specific rule explained it: no fallback needed
        for rule in group:
            try:
                found.extend(
                    in_user_code(job, f) for f in rule().check(job) if not blames_hangdoctor(job, f)
                )
            except Exception as error:
                errors.append(f"{rule.id}: {type(error).__name__}: {error}")
    found.sort(key=lambda f: _rank_key(f, specificity, job))
    kept: list[Finding] = []
    seen: set[_ThreadKey] = set()
    for finding in found:
        key = _thread_key(finding.culprit)
        if key is not None and key in seen:
            continue  # a better-ranked finding already explains this thread
        seen |= {k for c in (finding.culprit, *finding.related) if (k := _thread_key(c))}
        kept.append(finding)
    return Diagnosis(findings=tuple(kept), rule_errors=tuple(errors))

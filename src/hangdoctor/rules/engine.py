"""Run the rules over a job's evidence and rank what they find, most likely root cause first."""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass

from hangdoctor.analysis.job import JobView
from hangdoctor.analysis.sink_category import contradicts_sink
from hangdoctor.rules.base import Deferral, Rule
from hangdoctor.rules.finding import Culprit, Finding
from hangdoctor.rules.registry import ALL_RULES
from hangdoctor.rules.user_code import blames_hangdoctor, in_user_code

_REGISTERED = {rule.id: rule for rule in ALL_RULES}
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


def _same_process(mine: Culprit, theirs: Culprit) -> bool:
    """Whether two culprits are the same process on the same node."""
    return mine.pid is not None and mine.pid == theirs.pid and mine.host == theirs.host


def _same_party(mine: Culprit, theirs: Culprit) -> bool:
    """Whether two culprits are the same process (on the same node) or the same rank."""
    return _same_process(mine, theirs) or (mine.rank is not None and mine.rank == theirs.rank)


def _names_my_culprit(
    mine: Finding, theirs: Finding, same: Callable[[Culprit, Culprit], bool] = _same_party
) -> bool:
    """Whether their finding names my finding's culprit (by `same`: the same party, or only the
    same process), as its culprit or as a party to it."""
    return mine.culprit is not None and any(
        same(mine.culprit, party)
        for party in (theirs.culprit, *theirs.related)
        if party is not None
    )


def _to_fallbacks(deferral: Deferral, rules: Mapping[str, type[Rule]]) -> bool:
    """Whether a deferral is to fallback rules: they run only once no regular rule found a
    problem, so they have no finding yet to defer to. Such a deferral gives the case up to
    them whenever its condition holds: the finding is dropped before the engine decides whether
    the fallbacks run."""
    known = {**_REGISTERED, **rules}
    return all(t in known and known[t].fallback for t in deferral.to)


def _gives_way(
    finding: Finding, found: Sequence[Finding], rules: Mapping[str, type[Rule]], job: JobView
) -> bool:
    """Whether a rule that produced a finding here supersedes this one's rule, or this one's rule
    defers to one that did (`Rule.supersedes`, `Rule.defers_to`)."""
    producers = {f.id for f in found}
    if any(finding.id in rules[p].supersedes for p in producers if p in rules):
        return True
    rule = rules.get(finding.id)
    for deferral in rule.defers_to if rule is not None else ():
        if _to_fallbacks(deferral, rules):
            if deferral.when(job):
                return True
            continue
        theirs = [f for f in found if f.id in deferral.to]
        if deferral.same_culprit:
            theirs = [f for f in theirs if _names_my_culprit(finding, f)]
        if deferral.same_process:
            theirs = [f for f in theirs if _names_my_culprit(finding, f, _same_process)]
        if theirs and deferral.when(job):
            return True
    return False


def arbitrate(found: Sequence[Finding], rules: Sequence[type[Rule]], job: JobView) -> list[Finding]:
    """The findings that do not give way to another rule's, in their order: the rules' own
    declarations of what they defer to and what they supersede, resolved over what every rule
    produced (so the order the rules ran in does not matter), or gave up to fallbacks."""
    by_id = {rule.id: rule for rule in rules}
    return [f for f in found if not _gives_way(f, found, by_id, job)]


def findings_of(
    rule: type[Rule], job: JobView, rules: Sequence[type[Rule]] = ALL_RULES
) -> list[Finding]:
    """One rule's findings as the engine keeps them: after arbitration with the rules it defers
    to and those that supersede it (what a rule's examples are tested on)."""
    mine = list(rule().check(job))
    others = {i for deferral in rule.defers_to for i in deferral.to}
    others |= {other.id for other in rules if rule.id in other.supersedes}
    if not mine or not others:
        return mine
    theirs = [f for other in rules if other.id in others for f in other().check(job)]
    return [f for f in arbitrate([*mine, *theirs], [rule, *rules], job) if f.id == rule.id]


def run_rules(job: JobView, rules: Sequence[type[Rule]] = ALL_RULES) -> Diagnosis:
    """Findings of every rule, ranked; a finding that gives way to another rule's (`arbitrate`)
    is dropped, and so is one whose culprit a better-ranked finding already names (as culprit or
    as a party to it)."""
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
        found = arbitrate(found, rules, job)
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

"""The engine resolves what rules declare about each other: a rule's findings give way to those
of a rule it defers to (`Rule.defers_to`) or that supersedes it (`Rule.supersedes`)."""

from __future__ import annotations

from collections.abc import Iterable
from typing import ClassVar

from hangdoctor.analysis.job import JobView
from hangdoctor.evidence.logfiles import log_bundle
from hangdoctor.rules._failure_rule import EXCEPTION_FAILURE_RULES
from hangdoctor.rules.base import Deferral, Rule
from hangdoctor.rules.confidence import Confidence
from hangdoctor.rules.engine import findings_of, run_rules
from hangdoctor.rules.finding import Culprit, Finding, Severity
from hangdoctor.rules.registry import ALL_RULES
from hangdoctor.taxonomy import Category


def _job(*lines: str) -> JobView:
    return JobView(log_bundle(list(lines)))


class _LogRule(Rule):
    """Fires when its word is in the log, on the rank the line names (`rank=N`)."""

    category = Category.PROCESS_DEADLOCK
    summary = fires_when = why = instead = "a test rule"
    reads = "logs"
    word: ClassVar[str]

    def check(self, job: JobView) -> Iterable[Finding]:
        for line in job.bundle.job.output_tail if job.bundle.job else ():
            if self.word in line:
                said = dict(w.split("=") for w in line.split() if "=" in w)
                rank = int(said["rank"]) if "rank" in said else None
                pid = int(said["pid"]) if "pid" in said else None
                yield Finding(
                    id=self.id,
                    category=self.category,
                    severity=Severity.ERROR,
                    confidence=Confidence.LIKELY,
                    title=f"{self.word} seen",
                    culprit=Culprit(rank=rank, pid=pid) if rank is not None else None,
                )


class Timeout(_LogRule):
    id = "HD901"
    word = "timeout"


class Abort(_LogRule):
    """Gives way to the timeout when the abort was the watchdog's."""

    id = "HD902"
    word = "abort"
    defers_to = (
        Deferral(
            frozenset({"HD901"}),
            why="the watchdog aborted it after the timeout",
            when=lambda job: "watchdog" in " ".join(job.bundle.job.output_tail),
        ),
    )


class Counted(_LogRule):
    """Supersedes what the log says: it counted the same thing itself."""

    id = "HD903"
    word = "counted"
    supersedes = frozenset({"HD904"})


class Logged(_LogRule):
    id = "HD904"
    word = "logged"


class SameProcess(_LogRule):
    """Gives way to the timeout only on the rank that timed out."""

    id = "HD905"
    word = "stuck"
    defers_to = (Deferral(frozenset({"HD901"}), why="the same rank", same_culprit=True),)


class SameProcessOnly(_LogRule):
    """Gives way to the timeout only when it names this very process, not a sibling of its rank."""

    id = "HD909"
    word = "sibling"
    defers_to = (Deferral(frozenset({"HD901"}), why="the same process", same_process=True),)


class Chained(_LogRule):
    """Defers to a rule that itself gives way: what counts is that it found something."""

    id = "HD906"
    word = "chained"
    defers_to = (Deferral(frozenset({"HD902"}), why="the abort is the finding"),)


class Explained(_LogRule):
    """A fallback: names what no regular rule explained."""

    id = "HD907"
    word = "raised"
    fallback = True


class LeftToTheFallback(_LogRule):
    """Gives the case up to the fallback when the log shows an error of the user's own."""

    id = "HD908"
    word = "exited"
    defers_to = (
        Deferral(
            frozenset({"HD907"}),
            why="the fallback names the user's own error",
            when=lambda job: "raised" in " ".join(job.bundle.job.output_tail),
        ),
    )


_RULES = (
    Timeout,
    Abort,
    Counted,
    Logged,
    SameProcess,
    SameProcessOnly,
    Chained,
    Explained,
    LeftToTheFallback,
)


def _ids(job: JobView, rules: tuple[type[Rule], ...] = _RULES) -> list[str]:
    return sorted(f.id for f in run_rules(job, rules).findings)


def test_a_rule_gives_way_to_the_rule_it_defers_to_when_its_condition_holds() -> None:
    assert _ids(_job("timeout", "watchdog abort")) == ["HD901"]
    assert _ids(_job("timeout", "abort")) == ["HD901", "HD902"]  # not the watchdog's
    assert _ids(_job("watchdog abort")) == ["HD902"]  # the timeout rule found nothing


def test_a_rule_supersedes_another_wherever_it_found_something() -> None:
    assert _ids(_job("counted", "logged")) == ["HD903"]
    assert _ids(_job("logged")) == ["HD904"]


def test_a_deferral_to_the_same_culprit_needs_their_finding_to_name_mine() -> None:
    # (a culprit of a rank alone: the engine's dropping of a thread already named does not apply)
    assert _ids(_job("timeout rank=7", "stuck rank=7")) == ["HD901"]
    assert _ids(_job("timeout rank=7", "stuck rank=8")) == ["HD901", "HD905"]


def test_a_deferral_to_the_same_process_ignores_another_process_of_the_same_rank() -> None:
    assert _ids(_job("timeout rank=7 pid=70", "sibling rank=7 pid=70")) == ["HD901"]
    assert _ids(_job("timeout rank=7 pid=70", "sibling rank=7 pid=71")) == ["HD901", "HD909"]


def test_a_finding_deferred_to_counts_even_when_it_gives_way_itself() -> None:
    assert _ids(_job("timeout", "watchdog abort", "chained")) == ["HD901"]


def test_a_deferral_to_a_fallback_gives_the_case_up_to_it_when_its_condition_holds() -> None:
    # the fallback has no finding yet when the regular rules are arbitrated: it runs after
    assert _ids(_job("exited", "raised")) == ["HD907"]
    assert _ids(_job("exited")) == ["HD908"]
    assert _ids(_job("exited", "raised", "timeout")) == ["HD901"]  # a regular rule explained it
    assert findings_of(LeftToTheFallback, _job("exited", "raised"), _RULES) == []


def test_the_order_the_rules_run_in_does_not_matter() -> None:
    for lines in (("timeout", "watchdog abort", "chained"), ("counted", "logged")):
        assert _ids(_job(*lines), _RULES) == _ids(_job(*lines), _RULES[::-1])


def test_one_rule_s_findings_are_taken_after_arbitration() -> None:
    job = _job("timeout", "watchdog abort", "counted", "logged")
    assert findings_of(Abort, job, _RULES) == []
    assert findings_of(Logged, job, _RULES) == []
    assert [f.id for f in findings_of(Timeout, job, _RULES)] == ["HD901"]


def test_every_declared_rule_exists_runs_before_the_fallbacks_and_no_two_defer_to_each_other() -> (
    None
):
    rules = {rule.id: rule for rule in ALL_RULES}
    gives_way_to = {
        rule.id: {i for deferral in rule.defers_to for i in deferral.to}
        | {other.id for other in ALL_RULES if rule.id in other.supersedes}
        for rule in ALL_RULES
    }
    for rule_id, others in gives_way_to.items():
        for other in others:
            assert other in rules, f"{rule_id} gives way to an unknown rule {other}"
            assert rule_id not in gives_way_to[other], f"{rule_id} and {other} defer to each other"
    for rule in ALL_RULES:
        for deferral in rule.defers_to:
            # a fallback does not run once a regular rule found a problem: a regular rule
            # defers to regular rules, or gives the case up to fallbacks alone
            kinds = {rules[other].fallback for other in deferral.to}
            assert len(kinds) == 1, (rule.id, sorted(deferral.to))
    assert any(gives_way_to.values())


def test_the_rules_that_name_a_failed_job_s_exception_are_the_failure_rules() -> None:
    failure_rules = {
        rule.id for rule in ALL_RULES if rule.fallback and rule.__module__.endswith("_failure")
    }
    assert failure_rules - {"HD198"} == EXCEPTION_FAILURE_RULES

"""The rule interface: an id, a category, a check, and the examples that prove it.

Each rule carries evidence on which it must fire and evidence on which it must stay quiet (written
in its family's `examples.toml`, see `rules/examples.py`); the test suite is generated from these
(tests/unit/test_rule_examples.py).
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from typing import ClassVar, Literal

from hangdoctor.analysis.job import JobView
from hangdoctor.described import describe
from hangdoctor.rules.examples import Example, examples
from hangdoctor.rules.finding import Culprit, Finding
from hangdoctor.severity import Severity
from hangdoctor.taxonomy import Category


def always(job: JobView) -> bool:
    """A deferral that holds whatever the evidence."""
    return True


@dataclass(frozen=True)
class Deferral:
    """This rule's findings give way to another rule's: the engine drops them when a rule of `to`
    produced a finding in the same job (whether or not that finding is itself kept) and `when`
    holds of the job's evidence. With `same_culprit`, only a finding of theirs that names this
    finding's culprit (the same process, or the same rank) counts; with `same_process`, only
    one that names the same process."""

    to: frozenset[str]
    #: Why theirs is the better finding, for the reader of the rule.
    why: str
    when: Callable[[JobView], bool] = always
    same_culprit: bool = False
    #: Stricter than `same_culprit`: only a finding of theirs that names this finding's very
    #: process counts (not another process of the same rank, such as a sibling worker).
    same_process: bool = False


class Rule(ABC):
    """A diagnosis rule. Subclasses set the class attributes and implement `check`; their prose
    (summary, fires_when, why, instead) is the class docstring's labelled paragraphs
    (`hangdoctor.described`)."""

    id: ClassVar[str]
    category: ClassVar[Category]
    #: What it finds, in a phrase: the docstring's first paragraph.
    summary: ClassVar[str] = ""  # empty only under `python -OO`, which drops docstrings
    #: When it fires, in a sentence for the rule tables and pages (generated from this): the
    #: docstring's `Fires when:` paragraph.
    fires_when: ClassVar[str] = ""
    #: What evidence it reads: one process tree as captured, the ranks of a distributed job
    #: compared, or log lines (the job's output, the kernel log).
    reads: ClassVar[Literal["capture", "ranks", "logs"]]
    #: Why the mechanism hangs or fails a job: 2-4 sentences for the rule's page (docs/rules/);
    #: the docstring's `Why:` paragraph.
    why: ClassVar[str] = ""
    #: What to do instead, in general terms (each finding's fixes are specific); the docstring's
    #: `Instead:` paragraph.
    instead: ClassVar[str] = ""
    #: The severity of its usual finding (the rule pages mark warnings); a finding has it unless
    #: it says otherwise.
    default_severity: ClassVar[Severity] = Severity.ERROR
    #: Breaks ties between findings of equal severity and confidence: the more specific wins.
    specificity: ClassVar[int] = 50
    #: A fallback runs only when no other rule found a problem (error or critical).
    fallback: ClassVar[bool] = False
    #: Whether every finding names a culprit process (rules over logs may not know one).
    names_culprit: ClassVar[bool] = True
    #: The rules whose findings, when they have one in this job, make this rule's findings
    #: redundant or wrong (see `Deferral`); resolved by the engine (rules/engine.py). A rule
    #: defers only to regular rules: a fallback does not run once this rule found a problem.
    defers_to: ClassVar[tuple[Deferral, ...]] = ()
    #: The rules whose findings this rule's findings replace, in any job where it has one: the
    #: same as each of them deferring to this rule always.
    supersedes: ClassVar[frozenset[str]] = frozenset()
    #: Its examples: by default those of its id in its family's examples.toml (rules/examples.py),
    #: filled in when the class is made.
    fires_on: ClassVar[Sequence[Example]] = ()
    quiet_on: ClassVar[Sequence[Example]] = ()

    def __init_subclass__(cls, **kwargs: object) -> None:
        """A rule that has an id and whose classes state no examples takes those its family's
        file gives its id, so that each rule names its id once (rules of another origin, such as
        the known-error failures, state theirs). Its prose comes from its docstring."""
        super().__init_subclass__(**kwargs)
        describe(cls)
        stated = any(
            "fires_on" in vars(k) or "quiet_on" in vars(k) for k in cls.__mro__ if k is not Rule
        )
        if "id" in vars(cls) and not stated:
            cls.fires_on, cls.quiet_on = examples(cls.id)

    @abstractmethod
    def check(self, job: JobView) -> Iterable[Finding]:
        """Findings for this job's evidence: no I/O, no clock, no subprocesses."""

    def finding(
        self,
        *,
        confidence: float,
        title: str,
        explanation: str = "",
        culprit: Culprit | None = None,
        evidence: tuple[str, ...] = (),
        fixes: tuple[str, ...] = (),
        related: tuple[Culprit, ...] = (),
        severity: Severity | None = None,
    ) -> Finding:
        """A finding of this rule: its id and category, with what it found; its severity is the
        rule's usual one (`default_severity`) unless this finding is graver or milder."""
        return Finding(
            id=self.id,
            category=self.category,
            severity=self.default_severity if severity is None else severity,
            confidence=confidence,
            title=title,
            explanation=explanation,
            culprit=culprit,
            evidence=evidence,
            fixes=fixes,
            related=related,
        )

"""How sure a finding is, from one table: each level names the kind of evidence that earns it.

A finding's confidence orders findings of equal severity (rules/engine.py), so the levels keep
the distinct values the rules have always used: two rules that ranked one way still do. A rule
picks the level its evidence justifies and never writes a number.
"""

from __future__ import annotations

from enum import Enum


class Confidence(float, Enum):
    """A finding's confidence: a float (what `Finding.confidence` holds) with a name and a reason."""

    reason: str

    def __new__(cls, value: float, reason: str) -> Confidence:
        level = float.__new__(cls, value)
        level._value_ = value
        level.reason = reason
        return level

    PROVEN = (
        0.95,
        "the mechanism itself is in the evidence: the held objects of a cycle, or the library's "
        "own message naming the cause",
    )
    WITNESSED = (
        0.93,
        "the instrumentation saw the cause happen in the process, and the job stopped after it",
    )
    ANNOUNCED = (
        0.92,
        "the framework says it ended the job for this reason (a watchdog's own verdict)",
    )
    CERTAIN = (
        0.9,
        "one unambiguous state or line names the cause (a signal, an error, a wait that only one "
        "party can end)",
    )
    STRONG = (
        0.85,
        "the mechanism matched in full, one inference from the evidence (who would have ended "
        "the wait, who failed first)",
    )
    PROBABLE = (
        0.8,
        "the mechanism matched, with one link read from timing or from a single sample",
    )
    LIKELY = (
        0.75,
        "the usual cause of what was seen, with another cause still possible",
    )
    FAIR = (
        0.7,
        "the cause fits the evidence, but a better explanation may stand beside it",
    )
    SUGGESTIVE = (
        0.65,
        "the evidence points one way, without the mechanism (a minority that disagrees)",
    )
    PLAUSIBLE = (
        0.6,
        "a sign that often means this, but not always (a signal's usual sender, a warning)",
    )
    EVEN = (
        0.55,
        "as likely as not: the sign is there, the state that would confirm it is not",
    )
    POSSIBLE = (
        0.5,
        "one possible cause of several, named so that it is checked",
    )
    HINT = (
        0.45,
        "no mechanism, but the wait's shape (nobody left to end it) narrows the cause",
    )
    WEAK = (
        0.4,
        "a pattern seen outside the user's code: where to look, not what went wrong",
    )
    GUESS = (
        0.3,
        "no mechanism found: the finding says where the job stopped and what to look at",
    )

"""The check interface: an id, an area, a summary, a check over the doctor's facts, and the
examples that prove it.

Each check carries facts on which it must report (`fires_on`, with the status it must give) and
facts on which it must stay calm (`quiet_on`, with what it must say then); the test suite is
generated from these (tests/doctor/test_check_examples.py), so a check cannot be added without
them.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import ClassVar

from hangdoctor.described import describe
from hangdoctor.doctor.facts import Facts, GpuDevice
from hangdoctor.doctor.result import Area, CheckResult, Status

#: What a check may say on its `fires_on` examples, and on its `quiet_on` ones (None: nothing).
ALARMS: tuple[Status, ...] = ("warn", "problem")
CALM: tuple[Status | None, ...] = ("ok", "info", "skipped", None)


@dataclass(frozen=True)
class Example:
    """Facts built by hand, and the worst status the check must give on them (None: the check
    must say nothing at all)."""

    name: str
    facts: Callable[[], Facts]
    status: Status | None


class Check(ABC):
    """One thing the doctor checks. Subclasses set the class attributes and implement `check`;
    they live in `hangdoctor.doctor.checks.<area>` and are found there without a list. Their
    prose (summary, why, instead) is the class docstring's labelled paragraphs
    (`hangdoctor.described`)."""

    id: ClassVar[str]
    area: ClassVar[Area]
    #: What it checks, in one line (the table in docs/doctor.md says the same): the docstring's
    #: first paragraph.
    summary: ClassVar[str] = ""  # empty only under `python -OO`, which drops docstrings
    #: Why it matters for hangs: 2-4 sentences for the check's page (docs/rules/); `Why:`.
    why: ClassVar[str] = ""
    #: What to do instead, in general terms (each result's `fix` is specific); `Instead:`.
    instead: ClassVar[str] = ""
    #: True for a check that only reports what it sees (`info`) and never warns: it has no
    #: `fires_on` examples, and the tests make sure of that.
    informs_only: ClassVar[bool] = False
    fires_on: ClassVar[tuple[Example, ...]] = ()
    quiet_on: ClassVar[tuple[Example, ...]] = ()

    def __init_subclass__(cls, **kwargs: object) -> None:
        """A check's prose comes from its docstring."""
        super().__init_subclass__(**kwargs)
        describe(cls)

    @abstractmethod
    def check(self, facts: Facts) -> Iterator[CheckResult]:
        """Results for these facts: no I/O, no clock, no subprocesses."""

    def result(
        self,
        status: Status,
        title: str,
        *,
        found: str = "",
        wanted: str = "",
        why: str = "",
        fix: str = "",
        source: str | None = None,
    ) -> CheckResult:
        """A result of this check (its id and area filled in)."""
        return CheckResult(
            id=self.id,
            area=self.area,
            status=status,
            title=title,
            found=found,
            wanted=wanted,
            why=why,
            fix=fix,
            source=source,
        )


class GpuCheck(Check):
    """A check of each GPU on its own; the doctor lists results GPU by GPU."""

    @abstractmethod
    def check_gpu(self, gpu: GpuDevice) -> Iterator[CheckResult]:
        """Results for one GPU."""

    def check(self, facts: Facts) -> Iterator[CheckResult]:
        for device in facts.gpus.devices:
            yield from self.check_gpu(device)

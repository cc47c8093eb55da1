"""What a lint rule is and what it reports.

A rule is a class with a stable id, a TAXONOMY.md category, a message and a fix, and the code
examples that prove it, as diagnosis rules have: `quiet_on` snippets on which it must stay quiet
and `fires_on` snippets on which it must fire. In a `fires_on` snippet every line that must be
reported ends with the marker comment `# expect` (`// expect` in CUDA); the test suite
(tests/lint/test_rule_examples.py) is generated from these, so a rule cannot be added without
the evidence that it works. Rules live one to a file in `lint/rules/<family>/<rule>.py` and are
found by looking (hangdoctor.discovery).
"""

from __future__ import annotations

import ast
from collections.abc import Iterator
from dataclasses import dataclass
from typing import ClassVar, Literal

from hangdoctor.lint.index import ModuleIndex
from hangdoctor.severity import Severity
from hangdoctor.taxonomy import Category

#: The marker that ends each line a `fires_on` example expects to be reported.
EXPECT_MARKER = "expect"

Language = Literal["python", "cuda"]


@dataclass(frozen=True)
class LintFinding:
    """One reported problem."""

    #: The file, as the user named it (or as found under a named directory).
    path: str
    #: 1-based line of the offending code.
    line: int
    #: 1-based column.
    col: int
    #: Rule id, e.g. "HL101" (HL000 for a file that cannot be read or parsed).
    rule_id: str
    #: The rule's short name, e.g. "collective-under-rank-condition".
    name: str
    #: A TAXONOMY.md category: the hang this pattern leads to.
    category: str
    #: An `error` is a hang waiting to happen; a `warning` is a pattern that often causes one
    #: but may be deliberate.
    severity: Severity
    #: What is wrong here.
    message: str
    #: What to do about it.
    fix: str
    #: For a call made on some ranks only: "main" (rank 0, the main process) or "other" (the
    #: ranks but rank 0); None when the finding is not about a subset of ranks.
    ranks: str | None = None

    def sort_key(self) -> tuple[str, int, int, str]:
        return (self.path, self.line, self.col, self.rule_id)


@dataclass(frozen=True)
class Hit:
    """A place a rule reports, before it becomes a LintFinding; `message` overrides the rule's
    default message when the rule has something more specific to say (already translated:
    the rule makes it with `_`)."""

    line: int
    col: int  # 0-based, as in the ast
    message: str | None = None
    ranks: str | None = None  # see LintFinding.ranks

    @classmethod
    def at(cls, node: ast.AST, message: str | None = None, ranks: str | None = None) -> Hit:
        return cls(getattr(node, "lineno", 1), getattr(node, "col_offset", 0), message, ranks)


class LintRule:
    """Base of every lint rule. Subclasses set the class attributes and implement `check`."""

    id: ClassVar[str]
    name: ClassVar[str]
    category: ClassVar[Category]
    severity: ClassVar[Severity] = Severity.ERROR
    language: ClassVar[Language] = "python"
    #: `message`, `fix` and `why` are English, marked with `N_` (a class attribute is made at
    #: import time, before a language is chosen) and translated where they are shown: the
    #: finding is made (runner), the SARIF rules are written (render). The documentation
    #: generators read them as they are: docs/lint.md and docs/rules/ are English.
    message: ClassVar[str]
    fix: ClassVar[str]
    #: Why this pattern hangs, for its page (docs/rules/), `docs/lint.md` and SARIF help text.
    why: ClassVar[str]
    #: Snippets on which it must fire, at (exactly) the lines marked `# expect`.
    fires_on: ClassVar[tuple[str, ...]] = ()
    #: Snippets on which the rule must stay quiet.
    quiet_on: ClassVar[tuple[str, ...]] = ()

    def check(self, index: ModuleIndex) -> Iterator[Hit]:
        """Hits in one parsed Python module (CUDA rules implement `check_source`)."""
        raise NotImplementedError

    def check_source(self, text: str) -> Iterator[Hit]:
        """Hits in one CUDA source (Python rules implement `check`)."""
        raise NotImplementedError

"""The recall study's cases: small projects under cases/RULE/NAME that reproduce, in our own
words, code taken from public bug reports and fixing commits (`real`), textbook variants of the
same bugs (`textbook`), and the fixed code (`fixed`, which must stay quiet).

Each case is a directory (its own project: it holds a requirements.txt, so the linter's
project context is the case itself). One of its files starts with the header

    # case: HL401 real https://github.com/OWNER/REPO/pull/123

(`// case:` in CUDA), and every line a positive case expects to be reported ends with
`# expect: HL401` (`// expect: HL601`). `benchmarks/lint_study.py` turns the results into the
per-rule recall/precision table of benchmarks/LINT_STUDY.md; tests/lint/test_recall.py asserts
them.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path

from hangdoctor.lint.config import LintConfig
from hangdoctor.lint.model import LintFinding
from hangdoctor.lint.runner import Linter

CASES = Path(__file__).parent / "cases"
KINDS = ("real", "textbook", "fixed")
_HEADER = re.compile(r"^(?:#|//) case: (HL\d{3}) (real|textbook|fixed)(?: (\S+))?\s*$", re.M)
_EXPECT = re.compile(r"(?:#|//) expect: ((?:HL\d{3})(?:, *HL\d{3})*)\s*$")


@dataclass(frozen=True)
class Case:
    """One case directory."""

    path: Path
    rule: str
    kind: str
    #: The public report or fixing commit the code is taken from (required for `real`).
    source: str | None
    #: (file, line, rule) the case expects to be reported.
    expected: frozenset[tuple[str, int, str]]

    @property
    def name(self) -> str:
        return f"{self.rule}/{self.path.name}"


@dataclass
class Outcome:
    """What the linter made of one case."""

    case: Case
    findings: list[LintFinding]
    #: Expected (file, line, rule) that were reported.
    hits: set[tuple[str, int, str]] = field(default_factory=set)
    #: Findings no marker asked for: false positives.
    extra: list[LintFinding] = field(default_factory=list)

    @property
    def found(self) -> bool:
        """A positive counts as found when every line it marks is reported."""
        return bool(self.case.expected) and self.hits == set(self.case.expected)


def _relative(case_dir: Path, path: str) -> str:
    return Path(path).resolve().relative_to(case_dir.resolve()).as_posix()


def load_case(directory: Path) -> Case:
    headers: list[tuple[str, str, str | None]] = []
    expected: set[tuple[str, int, str]] = set()
    for file in sorted(p for p in directory.rglob("*") if p.is_file()):
        text = file.read_text(encoding="utf-8")
        headers += [(m[1], m[2], m[3]) for m in _HEADER.finditer(text)]
        for number, line in enumerate(text.splitlines(), start=1):
            marker = _EXPECT.search(line)
            if marker:
                for rule in marker[1].split(","):
                    expected.add((file.relative_to(directory).as_posix(), number, rule.strip()))
    if len(headers) != 1:
        raise ValueError(f"{directory}: expected one '# case:' header, found {len(headers)}")
    rule, kind, source = headers[0]
    return Case(directory, rule, kind, source, frozenset(expected))


def discover(root: Path = CASES) -> list[Case]:
    """Every case under `root`, sorted by rule and name."""
    return [
        load_case(d)
        for rule in sorted(root.iterdir())
        if rule.is_dir()
        for d in sorted(rule.iterdir())
        if d.is_dir()
    ]


def run_case(case: Case, linter: Linter) -> Outcome:
    """Lint the case directory as a user would lint their project."""
    findings = linter.lint_paths([case.path]).findings
    outcome = Outcome(case, findings)
    for finding in findings:
        key = (_relative(case.path, finding.path), finding.line, finding.rule_id)
        if key in case.expected:
            outcome.hits.add(key)
        else:
            outcome.extra.append(finding)
    return outcome


def run_all(cases: Iterable[Case] | None = None) -> list[Outcome]:
    linter = Linter(LintConfig())
    return [run_case(case, linter) for case in (discover() if cases is None else cases)]

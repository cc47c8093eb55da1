"""Walk the paths, lint each file once, and collect the findings.

One parse per Python file and one shared index (index.py) for all rules keep the linter fast;
a file that cannot be read or parsed becomes an HL000 finding and the walk goes on.
"""

from __future__ import annotations

import ast
import io
import os
import tokenize
import warnings
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path

from hangdoctor.lint.config import LintConfig
from hangdoctor.lint.index import ModuleIndex
from hangdoctor.lint.model import Hit, LintFinding, LintRule
from hangdoctor.lint.rules import ALL_RULES, RULES_BY_ID
from hangdoctor.lint.suppress import is_suppressed, suppressions

PYTHON_SUFFIXES = frozenset({".py", ".pyi"})
CUDA_SUFFIXES = frozenset({".cu", ".cuh"})
#: Directories never walked into: tools' and environments' own files, not the project's code.
SKIP_DIRS = frozenset({
    ".git", ".hg", ".svn", ".venv", "venv", ".env", "site-packages", "dist-packages",
    "node_modules", "__pycache__", ".tox", ".nox", ".mypy_cache", ".pytest_cache",
    ".ruff_cache", ".eggs", ".ipynb_checkpoints",
})


@dataclass
class LintResult:
    """What a run found."""

    findings: list[LintFinding]
    #: How many files were linted (parse errors included).
    files: int


def language_of(path: Path) -> str | None:
    suffix = path.suffix.lower()
    if suffix in PYTHON_SUFFIXES:
        return "python"
    if suffix in CUDA_SUFFIXES:
        return "cuda"
    return None


def iter_files(paths: Iterable[Path], config: LintConfig) -> Iterator[Path]:
    """The files to lint under `paths`, in a stable order. A file named explicitly is linted
    whatever its suffix (as Python unless it is .cu/.cuh), unless excluded."""
    for path in paths:
        if path.is_file():
            if not config.excluded(path):
                yield path
            continue
        for directory, dirs, files in os.walk(path):
            base = Path(directory)
            dirs[:] = sorted(d for d in dirs if d not in SKIP_DIRS
                             and not (base / d / "pyvenv.cfg").exists()
                             and not config.excluded(base / d))
            for name in sorted(files):
                file = base / name
                if language_of(file) is not None and not config.excluded(file):
                    yield file


def _decode(data: bytes) -> str:
    try:
        # utf-8-sig: a leading byte-order mark is legal in Python source (the interpreter
        # skips it) but a syntax error to ast.parse.
        return data.decode("utf-8-sig")
    except UnicodeDecodeError:
        encoding, _ = tokenize.detect_encoding(io.BytesIO(data).readline)
        return data.decode(encoding)  # raises when the declared encoding is wrong too


class Linter:
    """The selected rules, ready to run on files or snippets."""

    def __init__(self, config: LintConfig | None = None,
                 rules: Iterable[type[LintRule]] = ALL_RULES) -> None:
        self.config = config or LintConfig()
        chosen = [rule() for rule in rules if self.config.enabled(rule.id)]
        self.python = [r for r in chosen if r.language == "python"]
        self.cuda = [r for r in chosen if r.language == "cuda"]
        self.report_parse_errors = self.config.enabled("HL000")

    def lint_paths(self, paths: Iterable[Path]) -> LintResult:
        findings: list[LintFinding] = []
        count = 0
        for file in iter_files(paths, self.config):
            count += 1
            findings.extend(self.lint_file(file))
        findings.sort(key=LintFinding.sort_key)
        return LintResult(findings, count)

    def lint_file(self, path: Path) -> list[LintFinding]:
        display = str(path)
        try:
            data = path.read_bytes()
        except OSError as error:
            return self._parse_error(display, 1, 1, f"cannot read: {error.strerror or error}")
        language = "cuda" if path.suffix.lower() in CUDA_SUFFIXES else "python"
        findings = self.lint_source(data, display, language)
        ignored = self.config.ignored_in(path)
        if not ignored:
            return findings
        return [f for f in findings
                if not any(code == "ALL" or f.rule_id.startswith(code) for code in ignored)]

    def lint_source(self, data: bytes | str, display: str = "<source>",
                    language: str = "python") -> list[LintFinding]:
        """Findings in one file's contents."""
        try:
            text = data if isinstance(data, str) else _decode(data)
        except (UnicodeDecodeError, LookupError, SyntaxError) as error:
            return self._parse_error(display, 1, 1, f"cannot decode: {error}")
        hits: list[tuple[LintRule, Hit]] = []
        if language == "cuda":
            for rule in self.cuda:
                hits.extend((rule, hit) for hit in rule.check_source(text))
        elif self.python:
            try:
                with warnings.catch_warnings():
                    warnings.simplefilter("ignore")
                    tree = ast.parse(text, display)
            except SyntaxError as error:
                return self._parse_error(display, error.lineno or 1, error.offset or 1,
                                         f"syntax error: {error.msg}")
            except (ValueError, RecursionError, MemoryError) as error:
                return self._parse_error(display, 1, 1, f"cannot parse: {error}")
            index = ModuleIndex(tree, text)
            for rule in self.python:
                try:
                    hits.extend((rule, hit) for hit in rule.check(index))
                except RecursionError:
                    continue  # pathologically deep code: skip the rule, not the run
        if not hits:
            return []
        silenced = suppressions(text)
        findings = []
        seen: set[tuple[str, int, int]] = set()
        for rule, hit in hits:
            key = (rule.id, hit.line, hit.col)
            if key in seen or is_suppressed(silenced, hit.line, rule.id):
                continue
            seen.add(key)
            findings.append(_finding(rule, display, hit))
        findings.sort(key=LintFinding.sort_key)
        return findings

    def _parse_error(self, display: str, line: int, col: int, why: str) -> list[LintFinding]:
        if not self.report_parse_errors:
            return []
        rule = RULES_BY_ID["HL000"]
        return [_finding(rule(), display, Hit(line, max(col, 1) - 1, f"{why}; file skipped"))]


def _finding(rule: LintRule, path: str, hit: Hit) -> LintFinding:
    return LintFinding(path=path, line=hit.line, col=hit.col + 1, rule_id=rule.id,
                       name=rule.name, category=rule.category, severity=rule.severity,
                       message=hit.message or rule.message, fix=rule.fix)

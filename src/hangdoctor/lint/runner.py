"""Walk the paths, lint each file once, and collect the findings.

One parse per Python file and one shared, lazy index (index.py) for all rules keep the linter
fast, and the files are spread over the machine's cores (a process pool fed in chunks; the
findings are sorted, so the output does not depend on which process linted what). A file that
cannot be read or parsed becomes an HL000 finding and the walk goes on.
"""

from __future__ import annotations

import ast
import gc
import multiprocessing
import os
import threading
from collections.abc import Iterable, Iterator, Sequence
from concurrent.futures import ProcessPoolExecutor
from dataclasses import dataclass
from pathlib import Path

from hangdoctor.i18n import Language, _, active_language, set_language
from hangdoctor.lint.config import LintConfig
from hangdoctor.lint.index import ModuleIndex
from hangdoctor.lint.model import Hit, LintFinding, LintRule
from hangdoctor.lint.parsing import decode, parse
from hangdoctor.lint.project import SKIP_DIRS, project_of
from hangdoctor.lint.rules import ALL_RULES, RULES_BY_ID
from hangdoctor.lint.suppress import is_suppressed, suppressions

PYTHON_SUFFIXES = frozenset({".py", ".pyi"})
CUDA_SUFFIXES = frozenset({".cu", ".cuh"})
#: Below this many files a process pool costs more than it saves.
PARALLEL_MIN_FILES = 64
#: Chunks per worker: small enough that the last ones even out files of very different sizes.
CHUNKS_PER_JOB = 32


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
            dirs[:] = sorted(
                d
                for d in dirs
                if d not in SKIP_DIRS
                and not (base / d / "pyvenv.cfg").exists()
                and not config.excluded(base / d)
            )
            for name in sorted(files):
                file = base / name
                if language_of(file) is not None and not config.excluded(file):
                    yield file


def available_cores() -> int:
    """The cores this process may run on (its CPU affinity where the OS has one)."""
    if hasattr(os, "sched_getaffinity"):
        return max(1, len(os.sched_getaffinity(0)))
    return max(1, os.cpu_count() or 1)


class Linter:
    """The selected rules, ready to run on files or snippets."""

    def __init__(
        self, config: LintConfig | None = None, rules: Iterable[type[LintRule]] = ALL_RULES
    ) -> None:
        self.config = config or LintConfig()
        self.rule_types = tuple(rule for rule in rules if self.config.enabled(rule.id))
        chosen = [rule() for rule in self.rule_types]
        self.python = [r for r in chosen if r.language == "python"]
        self.cuda = [r for r in chosen if r.language == "cuda"]
        self.report_parse_errors = self.config.enabled("HL000")

    def lint_paths(self, paths: Iterable[Path], jobs: int = 1) -> LintResult:
        """Lint every file under `paths`, on `jobs` processes (0: every available core)."""
        files = list(iter_files(paths, self.config))
        jobs = available_cores() if jobs <= 0 else jobs
        if jobs > 1 and len(files) >= PARALLEL_MIN_FILES:
            findings = self._lint_parallel(files, jobs)
        else:
            findings = [f for file in files for f in self.lint_file(file)]
        findings.sort(key=LintFinding.sort_key)
        return LintResult(findings, len(files))

    def _lint_parallel(self, files: Sequence[Path], jobs: int) -> list[LintFinding]:
        # Largest files first, in small chunks: the workers finish together instead of one
        # waiting for the other's last big file (the findings are sorted afterwards).
        ordered = sorted(files, key=_size, reverse=True)
        size = max(1, -(-len(ordered) // (jobs * CHUNKS_PER_JOB)))
        chunks = [ordered[start : start + size] for start in range(0, len(ordered), size)]
        with ProcessPoolExecutor(
            max_workers=jobs,
            mp_context=_context(),
            initializer=_start_worker,
            initargs=(self.config, [r.id for r in self.rule_types], active_language()),
        ) as pool:
            return [f for found in pool.map(_lint_chunk, chunks) for f in found]

    def lint_file(self, path: Path) -> list[LintFinding]:
        display = str(path)
        try:
            data = path.read_bytes()
        except OSError as error:
            return self._parse_error(
                display,
                1,
                1,
                _("cannot read: {reason}; file skipped", reason=error.strerror or error),
            )
        language = "cuda" if path.suffix.lower() in CUDA_SUFFIXES else "python"
        findings = self.lint_source(data, display, language, path)
        ignored = self.config.ignored_in(path)
        if not ignored:
            return findings
        return [
            f
            for f in findings
            if not any(code == "ALL" or f.rule_id.startswith(code) for code in ignored)
        ]

    def lint_source(
        self,
        data: bytes | str,
        display: str = "<source>",
        language: str = "python",
        path: Path | None = None,
    ) -> list[LintFinding]:
        """Findings in one file's contents (`path`, when given, places it in its project)."""
        try:
            text = data if isinstance(data, str) else decode(data)
        except (UnicodeDecodeError, LookupError, SyntaxError) as error:
            return self._parse_error(
                display, 1, 1, _("cannot decode: {reason}; file skipped", reason=error)
            )
        hits: list[tuple[LintRule, Hit]] = []
        if language == "cuda":
            for rule in self.cuda:
                hits.extend((rule, hit) for hit in rule.check_source(text))
        elif self.python:
            try:
                tree = parse(text, display)
            except SyntaxError as error:
                return self._parse_error(
                    display,
                    error.lineno or 1,
                    error.offset or 1,
                    _("syntax error: {reason}; file skipped", reason=error.msg),
                )
            except (ValueError, RecursionError, MemoryError) as error:
                return self._parse_error(
                    display, 1, 1, _("cannot parse: {reason}; file skipped", reason=error)
                )
            hits = self._python_hits(tree, text, path)
        return self._findings(hits, text, display)

    def lint_parsed(self, tree: ast.Module, text: str, path: Path) -> list[LintFinding]:
        """Findings in a Python file the caller has already read and parsed (`parse`), with the
        project's ignores applied as `lint_file` applies them."""
        findings = self._findings(self._python_hits(tree, text, path), text, str(path))
        ignored = self.config.ignored_in(path)
        return [
            f
            for f in findings
            if not any(code == "ALL" or f.rule_id.startswith(code) for code in ignored)
        ]

    def _python_hits(
        self, tree: ast.Module, text: str, path: Path | None
    ) -> list[tuple[LintRule, Hit]]:
        where = None if path is None else path.absolute()
        project = None if where is None else project_of(where.parent)
        index = ModuleIndex(tree, text, where, project)
        hits: list[tuple[LintRule, Hit]] = []
        for rule in self.python:
            try:
                hits.extend((rule, hit) for hit in rule.check(index))
            except RecursionError:
                continue  # pathologically deep code: skip the rule, not the run
        return hits

    def _findings(
        self, hits: list[tuple[LintRule, Hit]], text: str, display: str
    ) -> list[LintFinding]:
        """The hits as findings: suppressed ones dropped, one per rule and place, sorted."""
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

    def _parse_error(self, display: str, line: int, col: int, message: str) -> list[LintFinding]:
        if not self.report_parse_errors:
            return []
        rule = RULES_BY_ID["HL000"]
        return [_finding(rule(), display, Hit(line, max(col, 1) - 1, message))]


def _size(path: Path) -> int:
    try:
        return path.stat().st_size
    except OSError:
        return 0


def _finding(rule: LintRule, path: str, hit: Hit) -> LintFinding:
    """The finding, in the language in force: a rule's own message and fix are marked (`N_`)
    where the rule is defined, at import time, and translated here; a hit's message already
    is (rules translate it as they make it)."""
    return LintFinding(
        path=path,
        line=hit.line,
        col=hit.col + 1,
        rule_id=rule.id,
        name=rule.name,
        category=rule.category.value,
        severity=rule.severity,
        message=hit.message or _(rule.message),
        fix=_(rule.fix),
        ranks=hit.ranks,
    )


def _context() -> multiprocessing.context.BaseContext:
    """fork where it is safe (this process runs no other thread): the workers start in
    milliseconds with the rules already imported; else the platform's safe default."""
    if "fork" in multiprocessing.get_all_start_methods() and threading.active_count() == 1:
        return multiprocessing.get_context("fork")
    return multiprocessing.get_context()


_worker: Linter | None = None


def _start_worker(config: LintConfig, rule_ids: list[str], language: Language) -> None:
    global _worker
    set_language(language)  # the findings a worker makes speak the parent's language
    _worker = Linter(config, [RULES_BY_ID[i] for i in rule_ids])
    # The linter makes no reference cycles (trees, indexes and findings are freed by
    # reference counting), so the cyclic collector would only rescan millions of live AST
    # nodes while files are parsed; it runs once per chunk instead.
    gc.disable()


def _lint_chunk(files: Sequence[Path]) -> list[LintFinding]:
    assert _worker is not None, "worker not started"
    found = [f for file in files for f in _worker.lint_file(file)]
    gc.collect()
    return found

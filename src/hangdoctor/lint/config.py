"""`[tool.hangdoctor.lint]` in pyproject.toml: which rules run, and on which files.

    [tool.hangdoctor.lint]
    select = ["HL1", "HL201"]        # ids or id prefixes; default: every rule
    ignore = ["HL302"]               # ids or prefixes never reported
    exclude = ["third_party", "*_pb2.py"]   # globs, relative to this pyproject.toml
    per-file-ignores = { "tests/*" = ["HL402"] }

The nearest pyproject.toml at or above the first linted path (else the working directory)
is read; one without a `[tool.hangdoctor.lint]` table means the defaults.
"""

from __future__ import annotations

import fnmatch
from dataclasses import dataclass, field
from pathlib import Path

try:
    import tomllib
except ModuleNotFoundError:  # Python < 3.11
    import tomli as tomllib  # type: ignore[no-redef,import-not-found,unused-ignore]

from hangdoctor.errors import BadInputError
from hangdoctor.i18n import _

_KEYS = {"select", "ignore", "exclude", "per-file-ignores", "per_file_ignores"}


@dataclass(frozen=True)
class LintConfig:
    """What to lint and what to report."""

    #: Ids or id prefixes to report; empty means every rule.
    select: tuple[str, ...] = ()
    #: Ids or id prefixes never to report.
    ignore: tuple[str, ...] = ()
    #: Globs of paths (relative to `root`) not to lint.
    exclude: tuple[str, ...] = ()
    #: (glob, ids) pairs: ids not reported in files matching glob.
    per_file_ignores: tuple[tuple[str, tuple[str, ...]], ...] = ()
    #: Where relative globs start: the pyproject.toml's directory (or the working directory).
    root: Path = field(default_factory=Path.cwd)
    #: The file this came from, if any.
    source: Path | None = None

    def enabled(self, rule_id: str) -> bool:
        """Whether `rule_id` is reported at all."""
        if self.select and not _matches(rule_id, self.select):
            return False
        return not _matches(rule_id, self.ignore)

    def ignored_in(self, path: Path) -> frozenset[str]:
        """Ids per-file-ignores silences in `path`."""
        if not self.per_file_ignores:
            return frozenset()
        relative = self.relative(path)
        return frozenset(
            code for glob, codes in self.per_file_ignores if _glob(relative, glob) for code in codes
        )

    def excluded(self, path: Path) -> bool:
        """Whether `path` (a file or directory) is excluded."""
        if not self.exclude:
            return False
        relative = self.relative(path)
        return any(_glob(relative, glob) for glob in self.exclude)

    def relative(self, path: Path) -> str:
        absolute = path.absolute()
        try:
            return absolute.relative_to(self.root.absolute()).as_posix()
        except ValueError:
            return absolute.as_posix()


def _matches(rule_id: str, codes: tuple[str, ...]) -> bool:
    return any(code == "ALL" or rule_id.startswith(code) for code in codes)


def _glob(relative: str, glob: str) -> bool:
    """`glob` matches the path, its file name, or one of its leading directories."""
    glob = glob.rstrip("/")
    if fnmatch.fnmatchcase(relative, glob) or fnmatch.fnmatchcase(
        relative.rsplit("/", 1)[-1], glob
    ):
        return True
    parts = relative.split("/")
    return any(fnmatch.fnmatchcase("/".join(parts[:n]), glob) for n in range(1, len(parts)))


def parse_codes(values: object, where: str) -> tuple[str, ...]:
    """Validate a list of rule ids or prefixes ("HL1", "HL101", "ALL")."""
    from hangdoctor.lint.rules import RULES_BY_ID

    if isinstance(values, str):
        values = [v for v in values.split(",")]
    if not isinstance(values, (list, tuple)) or not all(isinstance(v, str) for v in values):
        raise BadInputError(_("{where}: expected a list of rule ids", where=where))
    codes = tuple(v.strip().upper() for v in values if v.strip())
    for code in codes:
        if code != "ALL" and not any(rule_id.startswith(code) for rule_id in RULES_BY_ID):
            raise BadInputError(
                _("{where}: unknown rule id {code!r}", where=where, code=code),
                help=_("known ids: {ids}", ids=", ".join(sorted(RULES_BY_ID))),
            )
    return codes


def find_pyproject(start: Path) -> Path | None:
    """The nearest pyproject.toml at or above `start`."""
    start = start.absolute()
    directory = start if start.is_dir() else start.parent
    for candidate in (directory, *directory.parents):
        path = candidate / "pyproject.toml"
        if path.is_file():
            return path
    return None


def load_config(pyproject: Path | None) -> LintConfig:
    """The configuration in `pyproject` (defaults when None or without our table)."""
    if pyproject is None:
        return LintConfig()
    try:
        with pyproject.open("rb") as handle:
            data = tomllib.load(handle)
    except (OSError, tomllib.TOMLDecodeError) as error:
        raise BadInputError(_("cannot read {path}: {error}", path=pyproject, error=error)) from None
    table = data.get("tool", {}).get("hangdoctor", {}).get("lint")
    if table is None:
        return LintConfig(root=pyproject.parent, source=pyproject)
    where = f"{pyproject} [tool.hangdoctor.lint]"
    if not isinstance(table, dict):
        raise BadInputError(_("{where}: expected a table", where=where))
    unknown = set(table) - _KEYS
    if unknown:
        raise BadInputError(
            _("{where}: unknown key {key!r}", where=where, key=sorted(unknown)[0]),
            help=_("known keys: {keys}", keys=", ".join(sorted(_KEYS))),
        )
    exclude = table.get("exclude", [])
    if not isinstance(exclude, list) or not all(isinstance(g, str) for g in exclude):
        raise BadInputError(_("{where}: exclude must be a list of globs", where=where))
    per_file = table.get("per-file-ignores", table.get("per_file_ignores", {}))
    if not isinstance(per_file, dict):
        raise BadInputError(
            _("{where}: per-file-ignores must be a table of glob = [ids]", where=where)
        )
    return LintConfig(
        select=parse_codes(table.get("select", []), f"{where} select"),
        ignore=parse_codes(table.get("ignore", []), f"{where} ignore"),
        exclude=tuple(exclude),
        per_file_ignores=tuple(
            (glob, parse_codes(codes, f"{where} per-file-ignores"))
            for glob, codes in per_file.items()
        ),
        root=pyproject.parent,
        source=pyproject,
    )

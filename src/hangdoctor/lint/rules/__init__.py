"""Every lint rule, found by looking: one rule per module of a family folder
(`lint/rules/<family>/<rule>.py`; the id decides the family, see docs/lint.md), as diagnosis
rules and doctor checks are found. Modules whose name starts with `_` hold what several rules of
a family share; `common.py` holds what rules of several families share."""

from __future__ import annotations

from hangdoctor.discovery import find_classes
from hangdoctor.i18n import N_
from hangdoctor.lint.model import LintRule
from hangdoctor.severity import Severity
from hangdoctor.taxonomy import Category


class ParseError(LintRule):
    """Not a rule that checks code: the id under which a file that cannot be read or parsed is
    reported (and then skipped)."""

    id = "HL000"
    name = "parse-error"
    category = Category.PROCESS_BLOCKED_IO  # never used for diagnosis; a category is required
    severity = Severity.ERROR
    message = N_("file could not be read or parsed")
    fix = N_("fix the syntax error or the file's encoding (or exclude the file)")
    why = N_(
        "A file the linter cannot parse is not checked at all; it is reported so that this "
        "is never silent."
    )


ALL_RULES: tuple[type[LintRule], ...] = tuple(
    sorted(find_classes(__name__, LintRule, families=True), key=lambda rule: rule.id)
)

#: Every id the linter can report, HL000 included.
_EVERY_RULE: tuple[type[LintRule], ...] = (ParseError, *ALL_RULES)
RULES_BY_ID: dict[str, type[LintRule]] = {r.id: r for r in _EVERY_RULE}

"""How a report points a reader at each rule's page.

A path into the repository (`docs/rules/HD201.md`) exists only in a clone; a report is read
where it was written, or wherever it was copied. `hangdoctor explain HD201` writes the page from
the rule itself wherever hangdoctor is installed (`cli/explain.py`), so a report names that
command. The pages are also generated into `docs/rules/` for the documentation site
(`python -m hangdoctor.docs`).
"""

from __future__ import annotations

import re

#: Ids that have a page: diagnosis (HD), lint (HL) and doctor (DR) rules.
_DOCUMENTED = re.compile(r"^(HD|HL|DR)[1-9][0-9]{2}$")


def page_name(rule_id: str) -> str:
    """The file name of a rule's page in `docs/rules/`, e.g. `HD201.md`."""
    return f"{rule_id}.md"


def rule_doc(rule_id: str) -> str | None:
    """The command that shows a rule's page, or None for an id without one (HL000, a file
    that does not parse)."""
    return f"hangdoctor explain {rule_id}" if _DOCUMENTED.match(rule_id) else None

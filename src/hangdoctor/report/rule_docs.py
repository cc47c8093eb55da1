"""Where each rule's documentation page is, so that a report can link a finding to it.

One place decides the address: the pages are generated into `docs/rules/` of the repository
(`python -m hangdoctor.docs`); when the docs site is published, `DOCS_BASE` becomes its URL.
"""

from __future__ import annotations

import re

#: The folder (or, once published, the site address) that holds one page per rule.
DOCS_BASE = "docs/rules/"

#: Ids that have a page: diagnosis (HD), lint (HL) and doctor (DR) rules.
_DOCUMENTED = re.compile(r"^(HD|HL|DR)[1-9][0-9]{2}$")


def page_name(rule_id: str) -> str:
    """The file name of a rule's page, e.g. `HD201.md`."""
    return f"{rule_id}.md"


def rule_doc(rule_id: str) -> str | None:
    """The link to a rule's page, or None for an id without one (HL000, a file that does not
    parse)."""
    return DOCS_BASE + page_name(rule_id) if _DOCUMENTED.match(rule_id) else None

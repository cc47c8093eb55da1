"""Inline suppression: `# hangdoctor: ignore[HL101]` (or `// hangdoctor: ignore[...]` in CUDA)
on the reported line silences those ids there; `# hangdoctor: ignore` silences every id.

Only the reported line counts, as with flake8's `noqa`: a suppression should sit next to the
code it excuses, where a reviewer sees it.
"""

from __future__ import annotations

import re

_DIRECTIVE = re.compile(r"(?:#|//)\s*hangdoctor:\s*ignore(?:\[([^\]]*)\])?", re.IGNORECASE)

#: Suppressions of one file: line -> ids, where None means every id.
Suppressions = dict[int, frozenset[str] | None]


def suppressions(text: str) -> Suppressions:
    """The suppression comments in `text`, by 1-based line."""
    found: Suppressions = {}
    if "hangdoctor" not in text:
        return found
    for number, line in enumerate(text.splitlines(), start=1):
        if "hangdoctor" not in line:
            continue
        match = _DIRECTIVE.search(line)
        if match is None:
            continue
        if match.group(1) is None:
            found[number] = None
        else:
            ids = frozenset(
                part.strip().upper() for part in match.group(1).split(",") if part.strip()
            )
            previous = found.get(number, frozenset())
            found[number] = None if previous is None else previous | ids
    return found


def is_suppressed(found: Suppressions, line: int, rule_id: str) -> bool:
    if line not in found:
        return False
    ids = found[line]
    return ids is None or rule_id in ids

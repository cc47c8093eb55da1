"""A gettext `.po` catalog read and compiled to `.mo` bytes with the standard library alone.

The `.mo` files are built, not committed: the wheel's build compiles them (setup.py loads this
file by its path, in a build environment that has neither Babel nor hangdoctor's
dependencies), and a source checkout without them (an editable install) has `hangdoctor.i18n`
compile the `.po` in memory at first use. So this module imports nothing but the standard
library, and nothing of hangdoctor.

What is compiled is what GNU msgfmt and Babel compile: the header, and every entry whose
translation is complete and not fuzzy; an untranslated entry is left out, and gettext then
gives the English message."""

from __future__ import annotations

import re
import struct
from dataclasses import dataclass, field
from pathlib import Path

_ESCAPE = re.compile(r"\\(.)")
_ESCAPED = {"n": "\n", "t": "\t", "r": "\r", '"': '"', "\\": "\\"}
_KEYWORD = re.compile(r"^(msgctxt|msgid_plural|msgid|msgstr(?:\[(\d+)\])?)\s+(\".*\")\s*$")
_MO_MAGIC = 0x950412DE


class PoSyntaxError(ValueError):
    """A line of the .po that is not gettext's syntax (the file and line are in the message)."""


@dataclass
class PoEntry:
    """One message of a .po: its id (and plural id), its translation(s), its flags."""

    id: str = ""
    plural: str | None = None
    context: str | None = None
    strings: dict[int, str] = field(default_factory=dict)
    flags: set[str] = field(default_factory=set)
    line: int = 0

    @property
    def fuzzy(self) -> bool:
        return "fuzzy" in self.flags

    @property
    def translated(self) -> bool:
        """Every form has a translation, and none is marked fuzzy."""
        return bool(self.strings) and all(self.strings.values()) and not self.fuzzy


def _unquote(quoted: str, where: str) -> str:
    if len(quoted) < 2 or not (quoted.startswith('"') and quoted.endswith('"')):
        raise PoSyntaxError(f"{where}: not a quoted string: {quoted}")
    return _ESCAPE.sub(lambda m: _ESCAPED.get(m.group(1), m.group(1)), quoted[1:-1])


def parse_po(text: str, name: str = "<po>") -> list[PoEntry]:
    """The entries of a .po's text, the header (id "") first if it has one; obsolete entries
    (`#~`) are not entries."""
    entries: list[PoEntry] = []
    entry = PoEntry()
    current: tuple[str, int] | None = None  # the keyword continuation lines add to

    def finish() -> None:
        nonlocal entry, current
        if current is not None:
            entries.append(entry)
        entry, current = PoEntry(), None

    for number, raw in enumerate(text.splitlines(), start=1):
        line = raw.strip()
        where = f"{name}:{number}"
        if not line:
            finish()
        elif line.startswith("#"):
            if current is not None:
                finish()  # a comment after an entry's lines starts the next entry
            if line.startswith("#,"):
                entry.flags.update(f.strip() for f in line[2:].split(",") if f.strip())
        elif line.startswith('"'):
            if current is None:
                raise PoSyntaxError(f"{where}: a string with no keyword before it")
            _append(entry, current, _unquote(line, where))
        else:
            match = _KEYWORD.match(line)
            if match is None:
                raise PoSyntaxError(f"{where}: not gettext's syntax: {line}")
            keyword, index, quoted = match.groups()
            if keyword in ("msgctxt", "msgid") and current is not None and current[0] == "msgstr":
                finish()  # a new entry without the blank line between
            if keyword == "msgid" or (keyword == "msgctxt" and current is None):
                entry.line = number
            kind = "msgstr" if keyword.startswith("msgstr") else keyword
            current = (kind, int(index) if index is not None else 0)
            if kind == "msgstr":
                entry.strings[current[1]] = ""
            _append(entry, current, _unquote(quoted, where))
    finish()
    return entries


def _append(entry: PoEntry, current: tuple[str, int], text: str) -> None:
    kind, index = current
    if kind == "msgid":
        entry.id += text
    elif kind == "msgid_plural":
        entry.plural = (entry.plural or "") + text
    elif kind == "msgctxt":
        entry.context = (entry.context or "") + text
    else:
        entry.strings[index] += text


def read_po(path: Path) -> list[PoEntry]:
    return parse_po(path.read_text(encoding="utf-8"), str(path))


def compile_mo(entries: list[PoEntry]) -> bytes:
    """The .mo bytes of `entries`: the header and the complete, non-fuzzy translations."""
    pairs: dict[bytes, bytes] = {}
    for entry in entries:
        is_header = not entry.id and entry.context is None
        if not is_header and not entry.translated:
            continue
        key = entry.id if entry.plural is None else f"{entry.id}\0{entry.plural}"
        if entry.context is not None:
            key = f"{entry.context}\x04{key}"
        value = "\0".join(entry.strings[i] for i in sorted(entry.strings))
        pairs[key.encode("utf-8")] = value.encode("utf-8")
    return _mo_bytes(pairs)


def _mo_bytes(pairs: dict[bytes, bytes]) -> bytes:
    """GNU gettext's binary format: a header, the originals' and the translations' (length,
    offset) tables, sorted by original, then the strings, each ended by a NUL; no hash table."""
    keys = sorted(pairs)
    count = len(keys)
    header_size = 7 * 4
    originals_at = header_size
    translations_at = originals_at + 8 * count
    strings_at = translations_at + 8 * count
    blob = bytearray()
    original_table: list[int] = []
    translation_table: list[int] = []
    for table, texts in ((original_table, keys), (translation_table, [pairs[k] for k in keys])):
        for text in texts:
            table += [len(text), strings_at + len(blob)]
            blob += text + b"\0"
    header = struct.pack("<7I", _MO_MAGIC, 0, count, originals_at, translations_at, 0, 0)
    tables = struct.pack(f"<{4 * count}I", *original_table, *translation_table)
    return header + tables + bytes(blob)


def compile_file(po: Path, mo: Path) -> None:
    """Write `mo`, the compiled `po`."""
    mo.parent.mkdir(parents=True, exist_ok=True)
    mo.write_bytes(compile_mo(read_po(po)))

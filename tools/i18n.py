"""The message catalogs, with Babel: extract every `_`/`_n`/`N_` message of src/hangdoctor
(and `_(...)` in its Jinja templates), bring the Chinese catalog up to date, check it.

    python tools/i18n.py update            # extract, merge into zh's .po (new: untranslated)
    python tools/i18n.py merge PART.po...  # take translations from other .po files
    python tools/i18n.py check             # errors fail (exit 1); missing translations warn
    python tools/i18n.py missing [PATH...] # untranslated messages, optionally only from PATHs
    python tools/i18n.py part NAME PATH... # tools/i18n_parts/NAME.po: the messages of PATHs,
                                           # to translate apart and `merge` later

Only the .po is committed. The wheel's build compiles it to the .mo the installed package reads
(setup.py, with hangdoctor's own standard-library compiler, src/hangdoctor/po_catalog.py), and
a source checkout compiles it in memory at first use: Babel is a development tool here (the
`test` extra), needed neither to build nor to run.

A message without a translation is not an error: the report shows it in English, and `check`
lists it as a warning. Errors are what would show wrong text or none: a translation whose
`{fields}` differ from its message's, a .po that hangdoctor's compiler reads otherwise than
Babel does."""

from __future__ import annotations

import argparse
import ast
import gettext
import io
import re
import sys
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from functools import cache
from pathlib import Path

from babel.messages.catalog import Catalog, Message
from babel.messages.extract import extract_from_dir
from babel.messages.pofile import read_po, write_po

from hangdoctor.po_catalog import PoSyntaxError, compile_mo
from hangdoctor.po_catalog import read_po as read_po_stdlib

ROOT = Path(__file__).resolve().parents[1]
PACKAGE = ROOT / "src" / "hangdoctor"
LOCALE = PACKAGE / "locale"
DOMAIN = "hangdoctor"
TRANSLATED = ("zh",)
KEYWORDS = {"_": None, "_n": (1, 2), "N_": None}
METHODS = [
    ("instrument/**", "ignore"),  # runs inside the job, in English, on Python 3.8+
    ("**.py", "python"),
    ("**/templates/**.j2", "jinja2"),
]
_FIELD = re.compile(r"(?<!\{)\{([A-Za-z_][A-Za-z0-9_]*)[^{}]*\}(?!\})")


@dataclass(frozen=True)
class Extracted:
    """One message as the code has it, and where."""

    id: str | tuple[str, str]
    where: tuple[tuple[str, int], ...]


@cache
def extract() -> dict[str | tuple[str, str], list[tuple[str, int]]]:
    """Every message of the package: its id (a pair for `_n`) and the places it is used (read
    once a run: the code does not change under it)."""
    found: dict[str | tuple[str, str], list[tuple[str, int]]] = {}
    options = {"**/templates/**.j2": {"extensions": "jinja2.ext.do"}}
    for filename, line, message, _comments, _context in extract_from_dir(
        PACKAGE, METHODS, options, KEYWORDS
    ):
        key: str | tuple[str, str]
        if isinstance(message, tuple):
            if len(message) < 2 or not message[0] or not message[1]:
                continue
            key = (message[0], message[1])
        elif message:
            key = message
        else:
            continue
        found.setdefault(key, []).append((filename, line))
    for key, place in _nested_messages():
        if key not in found:
            found[key] = [place]
    return found


def _nested_messages() -> Iterator[tuple[str | tuple[str, str], tuple[str, int]]]:
    """Messages that Babel's extractor misses: a `_()` inside the arguments of another (the
    words of a list joined into a sentence), which a Chinese report would then show in
    English (issue 29, item 9)."""
    for path in sorted(PACKAGE.rglob("*.py")):
        tree = ast.parse(path.read_text(encoding="utf-8"))
        for node in ast.walk(tree):
            if not (
                isinstance(node, ast.Call)
                and isinstance(node.func, ast.Name)
                and node.func.id in ("_", "_n", "N_")
                and node.args
            ):
                continue
            texts = [
                a.value
                for a in node.args[:2]
                if isinstance(a, ast.Constant) and isinstance(a.value, str)
            ]
            if not texts:
                continue
            where = (str(path.relative_to(PACKAGE)), node.lineno)
            if node.func.id == "_n" and len(texts) == 2:
                yield (texts[0], texts[1]), where
            elif node.func.id != "_n":
                yield texts[0], where


def po_path(language: str) -> Path:
    return LOCALE / language / "LC_MESSAGES" / f"{DOMAIN}.po"


def load(path: Path, language: str) -> Catalog:
    if not path.exists():
        return Catalog(
            locale=language,
            domain=DOMAIN,
            project="hangdoctor",
            copyright_holder="the hangdoctor authors",
            header_comment=f"# hangdoctor's messages in {language}: tools/i18n.py keeps them.",
        )
    with path.open("rb") as handle:
        return read_po(handle, locale=language, domain=DOMAIN)


def save(catalog: Catalog, path: Path) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    buffer = io.BytesIO()
    write_po(buffer, catalog, width=100, sort_output=True, omit_header=False)
    path.write_bytes(buffer.getvalue())


def template() -> Catalog:
    catalog = Catalog(domain=DOMAIN, project="hangdoctor")
    for key, where in extract().items():
        catalog.add(key, locations=sorted(set(where)), flags=())
    return catalog


def update() -> None:
    """Bring each catalog to the code's messages: new ones untranslated, old ones dropped."""
    pot = template()
    for language in TRANSLATED:
        catalog = load(po_path(language), language)
        catalog.update(pot, no_fuzzy_matching=True)
        catalog.obsolete.clear()
        save(catalog, po_path(language))
        print(f"{language}: {len(catalog)} messages, {len(list(untranslated(catalog)))} to do")


def merge(parts: Iterable[Path]) -> None:
    """Take translations from `parts` (other .po files) for messages still untranslated."""
    for language in TRANSLATED:
        catalog = load(po_path(language), language)
        taken = 0
        for part in parts:
            for message in load(part, language):
                if not message.id or not _has_text(message):
                    continue
                mine = catalog.get(message.id)
                if mine is not None and not _has_text(mine):
                    mine.string = message.string
                    taken += 1
        save(catalog, po_path(language))
        print(f"{language}: {taken} translations taken")


def _has_text(message: Message) -> bool:
    if isinstance(message.string, tuple | list):
        return all(message.string)
    return bool(message.string)


def untranslated(catalog: Catalog) -> Iterator[Message]:
    for message in catalog:
        if message.id and (not _has_text(message) or message.fuzzy):
            yield message


def fields(text: str) -> set[str]:
    """The named fields of a format string (`{rank}`, `{share:.0%}`), not `{{literal}}`."""
    return set(_FIELD.findall(text.replace("{{", "").replace("}}", "")))


def _first_place(where: list[tuple[str, int]]) -> str:
    return f"{where[0][0]}:{where[0][1]}"


def untranslated_messages() -> list[str]:
    """The code's messages with no translation (a warning: the report shows them in English),
    one line each, with the first place that uses it."""
    found = extract()
    missing_lines: list[str] = []
    for language in TRANSLATED:
        catalog = load(po_path(language), language)
        for key, where in sorted(found.items(), key=lambda item: item[1][0]):
            message = catalog.get(key if isinstance(key, str) else key[0])
            english = key if isinstance(key, str) else key[1]
            if message is None or not _has_text(message) or message.fuzzy:
                missing_lines.append(
                    f"{language}: no translation of {english!r} ({_first_place(where)})"
                )
    return missing_lines


def unused_entries() -> list[str]:
    """Entries of a .po whose message the code no longer has (a warning: gettext never looks
    them up; `update` drops them)."""
    used = {key if isinstance(key, str) else key[0] for key in extract()}
    return [
        f"{language}: {message.id if isinstance(message.id, str) else message.id[0]!r} is no "
        "longer used (tools/i18n.py update drops it)"
        for language in TRANSLATED
        for message in load(po_path(language), language)
        if message.id and (message.id if isinstance(message.id, str) else message.id[0]) not in used
    ]


def problems() -> list[str]:
    """What is wrong with the catalogs (errors): translations whose fields differ from their
    message's, and a .po that the package's own compiler (what the wheel's build and a source
    checkout use) reads otherwise than Babel does."""
    found = extract()
    wrong: list[str] = []
    for language in TRANSLATED:
        catalog = load(po_path(language), language)
        for key, where in sorted(found.items(), key=lambda item: item[1][0]):
            message = catalog.get(key if isinstance(key, str) else key[0])
            english = key if isinstance(key, str) else key[1]
            if message is None or not _has_text(message) or message.fuzzy:
                continue  # a warning (untranslated_messages), not an error
            strings = (
                message.string if isinstance(message.string, tuple | list) else [message.string]
            )
            for string in strings:
                string = string or ""
                if fields(string) != fields(english) and not (
                    isinstance(key, tuple) and fields(string) <= fields(english) | {"count"}
                ):
                    wrong.append(
                        f"{language}: fields of {english!r} ({_first_place(where)}) differ in "
                        f"{string!r}"
                    )
        wrong += _compiled_otherwise(language, catalog)
    return wrong


def _compiled_otherwise(language: str, catalog: Catalog) -> list[str]:
    """The translations hangdoctor's compiler gives that Babel's reading of the .po does not
    (or a .po it cannot read at all)."""
    path = po_path(language)
    try:
        compiled = gettext.GNUTranslations(io.BytesIO(compile_mo(read_po_stdlib(path))))
    except (PoSyntaxError, OSError) as error:
        return [f"{language}: hangdoctor cannot compile {path.relative_to(ROOT)}: {error}"]
    # gettext keys a plural's forms by (singular, index)
    ours = {k: v for k, v in compiled._catalog.items() if k != ""}  # type: ignore[attr-defined]
    theirs: dict[object, object] = {}
    for message in catalog:
        if not message.id or not _has_text(message) or message.fuzzy:
            continue
        if isinstance(message.id, tuple | list) and isinstance(message.string, tuple | list):
            for index, form in enumerate(message.string):
                theirs[(message.id[0], index)] = form
        else:
            theirs[message.id] = message.string
    if ours == theirs:
        return []
    differ = sorted(
        str(k) for k in set(ours) ^ set(theirs) | {k for k in ours if ours[k] != theirs.get(k)}
    )
    return [
        f"{language}: hangdoctor's compiler reads {path.relative_to(ROOT)} otherwise than Babel "
        f"for {len(differ)} messages, e.g. {differ[:3]}"
    ]


PARTS = ROOT / "tools" / "i18n_parts"


def part(name: str, paths: list[str]) -> None:
    """Write tools/i18n_parts/NAME.po with the messages used in `paths` (files or folders
    under src/hangdoctor), keeping the translations it has; prints how many are left to do."""
    prefixes = [str(Path(p).resolve().relative_to(PACKAGE)) for p in paths]
    path = PARTS / f"{name}.po"
    for language in TRANSLATED:
        kept = load(path, language)
        fresh = Catalog(locale=language, domain=DOMAIN, project="hangdoctor")
        for key, where in extract().items():
            mine = sorted({w for w in where if any(w[0].startswith(p) for p in prefixes)})
            if not mine:
                continue
            old = kept.get(key if isinstance(key, str) else key[0])
            string = old.string if old is not None else ("", "") if isinstance(key, tuple) else ""
            fresh.add(key, string=string, locations=mine)
        save(fresh, path)
        print(
            f"{path.relative_to(ROOT)}: {len(fresh)} messages, "
            f"{len(list(untranslated(fresh)))} to do"
        )


def missing(paths: list[str]) -> None:
    prefixes = [str(Path(p).resolve().relative_to(PACKAGE)) for p in paths]
    for line in untranslated_messages():
        if not prefixes or any(f"({prefix}" in line for prefix in prefixes):
            print(line)


ACTIONS = ("update", "merge", "check", "missing", "part")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("action", choices=ACTIONS)
    parser.add_argument("paths", nargs="*")
    args = parser.parse_args(argv)
    if args.action == "update":
        update()
    elif args.action == "merge":
        merge(Path(p) for p in args.paths)
    elif args.action == "part":
        part(args.paths[0], args.paths[1:])
    elif args.action == "missing":
        missing(args.paths)
    else:
        return check()
    return 0


def check() -> int:
    """Print the warnings (with their count) and the errors; 1 when there is an error."""
    untranslated_lines = untranslated_messages()
    if untranslated_lines:
        print(
            f"warning: {len(untranslated_lines)} messages have no translation "
            "(they show in English):"
        )
        print("\n".join(f"  {line}" for line in untranslated_lines))
    unused = unused_entries()
    if unused:
        print(f"warning: {len(unused)} entries are no longer used:")
        print("\n".join(f"  {line}" for line in unused))
    wrong = problems()
    if wrong:
        print(f"error: {len(wrong)} problems:")
        print("\n".join(f"  {line}" for line in wrong))
        return 1
    print("catalogs complete" if not untranslated_lines and not unused else "no errors")
    return 0


if __name__ == "__main__":
    sys.exit(main())

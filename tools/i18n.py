"""The message catalogs, with Babel: extract every `_`/`_n`/`N_` message of src/hangdoctor
(and `_(...)` in its Jinja templates), bring the Chinese catalog up to date, compile it.

    python tools/i18n.py update            # extract, merge into zh's .po (new: untranslated)
    python tools/i18n.py merge PART.po...  # take translations from other .po files
    python tools/i18n.py compile           # .po -> .mo (committed: the package reads .mo)
    python tools/i18n.py check             # what tests/unit/test_translations.py checks
    python tools/i18n.py missing [PATH...] # untranslated messages, optionally only from PATHs
    python tools/i18n.py part NAME PATH... # tools/i18n_parts/NAME.po: the messages of PATHs,
                                           # to translate apart and `merge` later

Babel is a development tool here (the `test` extra); the installed package needs only the
compiled .mo and the standard library's gettext."""

from __future__ import annotations

import argparse
import ast
import io
import re
import sys
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path

from babel.messages.catalog import Catalog, Message
from babel.messages.extract import extract_from_dir
from babel.messages.mofile import read_mo, write_mo
from babel.messages.pofile import read_po, write_po

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


def extract() -> dict[str | tuple[str, str], list[tuple[str, int]]]:
    """Every message of the package: its id (a pair for `_n`) and the places it is used."""
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


def compile_catalogs() -> None:
    for language in TRANSLATED:
        catalog = load(po_path(language), language)
        with po_path(language).with_suffix(".mo").open("wb") as handle:
            write_mo(handle, catalog, use_fuzzy=False)


def _has_text(message: Message) -> bool:
    if isinstance(message.string, tuple | list):
        return all(message.string)
    return bool(message.string)


def untranslated(catalog: Catalog) -> Iterator[Message]:
    for message in catalog:
        if message.id and (not _has_text(message) or message.fuzzy):
            yield message


def _same(value: object) -> object:
    """A message's id or string, comparable whichever file it was read from: a plural's are a
    tuple in a .po and a list in a .mo."""
    return tuple(value) if isinstance(value, tuple | list) else value


def fields(text: str) -> set[str]:
    """The named fields of a format string (`{rank}`, `{share:.0%}`), not `{{literal}}`."""
    return set(_FIELD.findall(text.replace("{{", "").replace("}}", "")))


def problems() -> list[str]:
    """What is wrong with the catalogs: messages of the code without a translation, and
    translations whose fields differ from their message's."""
    found = extract()
    wrong: list[str] = []
    for language in TRANSLATED:
        catalog = load(po_path(language), language)
        for key, where in sorted(found.items(), key=lambda item: item[1][0]):
            message = catalog.get(key if isinstance(key, str) else key[0])
            place = f"{where[0][0]}:{where[0][1]}"
            english = key if isinstance(key, str) else key[1]
            if message is None or not _has_text(message) or message.fuzzy:
                wrong.append(f"{language}: no translation of {english!r} ({place})")
                continue
            strings = (
                message.string if isinstance(message.string, tuple | list) else [message.string]
            )
            for string in strings:
                string = string or ""
                if fields(string) != fields(english) and not (
                    isinstance(key, tuple) and fields(string) <= fields(english) | {"count"}
                ):
                    wrong.append(
                        f"{language}: fields of {english!r} ({place}) differ in {string!r}"
                    )
        mo = po_path(language).with_suffix(".mo")
        if not mo.exists():
            wrong.append(f"{language}: {mo.relative_to(ROOT)} is missing (tools/i18n.py compile)")
            continue
        with mo.open("rb") as handle:
            compiled = {_same(m.id): _same(m.string) for m in read_mo(handle) if m.id}
        written = {
            _same(m.id): _same(m.string) for m in catalog if m.id and _has_text(m) and not m.fuzzy
        }
        if compiled != written:
            wrong.append(
                f"{language}: {mo.relative_to(ROOT)} is out of date (tools/i18n.py compile)"
            )
    return wrong


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
    for line in problems():
        if not prefixes or any(f"({prefix}" in line for prefix in prefixes):
            print(line)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "action", choices=["update", "merge", "compile", "check", "missing", "part"]
    )
    parser.add_argument("paths", nargs="*")
    args = parser.parse_args(argv)
    if args.action == "update":
        update()
    elif args.action == "merge":
        merge(Path(p) for p in args.paths)
    elif args.action == "compile":
        compile_catalogs()
    elif args.action == "part":
        part(args.paths[0], args.paths[1:])
    elif args.action == "missing":
        missing(args.paths)
    else:
        wrong = problems()
        print("\n".join(wrong) or "catalogs complete")
        return 1 if wrong else 0
    return 0


if __name__ == "__main__":
    sys.exit(main())

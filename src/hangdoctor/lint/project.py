"""The project a linted file belongs to: where it starts, what it imports, and its other modules.

Several bugs span modules: a metrics tracker without a network timeout is only training code
because the training script imports it; a batch size lives in `config.py`; a collective sits in
a helper that another module calls under `if rank == 0:`. A file's project is found from the
file alone (no list of linted files is needed, so any process can answer for any file):

* its root is the nearest enclosing directory with a project marker (pyproject.toml, setup.py,
  setup.cfg, requirements.txt, a .git entry), never above an install directory
  (site-packages: each installed package is its own project); without a marker, the top of
  the Python package the file is in, else the file's directory;
* facts about the whole project (does anything import a framework?) come from reading its
  files lazily, once per process, stopping at the first that answers;
* other modules are parsed on demand (and cached) when a rule follows an import into them.
"""

from __future__ import annotations

import ast
import os
import re
from collections.abc import Iterator
from functools import cache
from pathlib import Path

from hangdoctor.lint.index import ModuleIndex
from hangdoctor.lint.parsing import decode, parse

MARKERS = ("pyproject.toml", "setup.py", "setup.cfg", "requirements.txt", ".git")
#: Directories holding installed packages: never part of a project found above them.
INSTALL_DIRS = frozenset({"site-packages", "dist-packages"})
#: Directories a project scan never enters (tools' and environments' files).
SKIP_DIRS = frozenset(
    {
        ".git",
        ".hg",
        ".svn",
        ".venv",
        "venv",
        ".env",
        "site-packages",
        "dist-packages",
        "node_modules",
        "__pycache__",
        ".tox",
        ".nox",
        ".mypy_cache",
        ".pytest_cache",
        ".ruff_cache",
        ".eggs",
        ".ipynb_checkpoints",
    }
)
#: Files a project scan reads at most (a marker-less home directory can be huge).
SCAN_LIMIT = 20_000
_IMPORT_LINE = re.compile(rb"^[ \t]*(?:from|import)[ \t]+([A-Za-z_]\w*)", re.MULTILINE)
#: Modules parsed on demand, kept per process (a small cache: rules follow few imports).
_MODULE_CACHE_SIZE = 256


@cache
def project_root(directory: Path) -> Path:
    """The root of the project that files in `directory` belong to (see the module doc)."""
    current = directory
    while True:
        if any((current / marker).exists() for marker in MARKERS):
            return current
        parent = current.parent
        if parent == current or parent.name in INSTALL_DIRS or current.name in INSTALL_DIRS:
            break
        current = parent
    return package_top(directory)


def package_top(directory: Path) -> Path:
    """The outermost package directory containing `directory` (itself if not a package)."""
    top = directory
    while (top / "__init__.py").exists() and (top.parent / "__init__.py").exists():
        top = top.parent
    return top


def python_files(root: Path) -> Iterator[Path]:
    """The project's Python files, in a stable order, skipping tools' directories."""
    for directory, dirs, files in os.walk(root):
        base = Path(directory)
        dirs[:] = sorted(
            d for d in dirs if d not in SKIP_DIRS and not (base / d / "pyvenv.cfg").exists()
        )
        for name in sorted(files):
            if name.endswith(".py"):
                yield base / name


class Project:
    """One project root and what rules ask about it, answered lazily and remembered."""

    def __init__(self, root: Path) -> None:
        self.root = root
        self._uses: dict[frozenset[str], bool] = {}
        self._mentions: dict[str, list[Path]] = {}

    def uses(self, packages: frozenset[str]) -> bool:
        """Whether any module of the project imports one of `packages` (top-level names)."""
        known = self._uses.get(packages)
        if known is None:
            known = self._uses[packages] = self._find_import(packages)
        return known

    def _find_import(self, packages: frozenset[str]) -> bool:
        for count, path in enumerate(python_files(self.root)):
            if count >= SCAN_LIMIT:
                return False
            try:
                data = path.read_bytes()
            except OSError:
                continue
            tops = {m.decode() for m in _IMPORT_LINE.findall(data)}
            if tops & packages:
                # Confirm with the parser: an import in a docstring's example is not one.
                index = module_index(path)
                if index is not None and index.imported & packages:
                    return True
        return False

    def files_mentioning(self, word: str) -> list[Path]:
        """The project's files whose text contains `word` (a cheap first cut before a rule
        parses them to see how they use it)."""
        found = self._mentions.get(word)
        if found is None:
            needle = word.encode()
            found = []
            for count, path in enumerate(python_files(self.root)):
                if count >= SCAN_LIMIT:
                    break
                try:
                    if needle in path.read_bytes():
                        found.append(path)
                except OSError:
                    continue
            self._mentions[word] = found
        return found

    def resolve(self, importer: Path, module: str, level: int) -> Path | None:
        """The file of `module` as imported from `importer` (`from .x import` when `level`
        > 0), when it is inside this project; None for anything else (installed packages)."""
        parts = [p for p in module.split(".") if p]
        if level:
            base = importer.parent
            for _ in range(level - 1):
                base = base.parent
            bases = [base]
        else:
            bases = [importer.parent, self.root, self.root / "src"]
        for base in bases:
            candidate = base.joinpath(*parts) if parts else base
            for path in (
                candidate.with_suffix(".py") if parts else None,
                candidate / "__init__.py",
            ):
                if path is not None and path.is_file() and self._inside(path):
                    return path
        return None

    def _inside(self, path: Path) -> bool:
        try:
            path.resolve().relative_to(self.root.resolve())
        except ValueError:
            return False
        return True


@cache
def project_of(directory: Path) -> Project:
    """The (per-process, shared) Project of files in `directory`."""
    return _project_at(project_root(directory))


@cache
def _project_at(root: Path) -> Project:
    return Project(root)


_modules: dict[Path, ModuleIndex | None] = {}


def module_index(path: Path) -> ModuleIndex | None:
    """Another module of a project, parsed on demand (None when it cannot be read)."""
    if path in _modules:
        return _modules[path]
    try:
        text = decode(path.read_bytes())
        index: ModuleIndex | None = ModuleIndex(
            parse(text, str(path)), text, path, project_of(path.parent)
        )
    except (
        OSError,
        UnicodeDecodeError,
        LookupError,
        SyntaxError,
        ValueError,
        RecursionError,
        MemoryError,
    ):
        index = None
    if len(_modules) >= _MODULE_CACHE_SIZE:
        _modules.pop(next(iter(_modules)))
    _modules[path] = index
    return index


def imported_module(index: ModuleIndex, local: str) -> tuple[ModuleIndex, str] | None:
    """Where `local` comes from when this module got it with `from MODULE import NAME as
    local`, MODULE being part of the project: (that module, NAME). None otherwise."""
    if index.project is None or index.path is None:
        return None
    source = index.from_imports.get(local)
    if source is None:
        return None
    module, name, level = source
    path = index.project.resolve(index.path, module, level)
    if path is None:
        # `from package import module`: the name is a submodule.
        return None
    target = module_index(path)
    return None if target is None else (target, name)


def submodule(index: ModuleIndex, local: str) -> ModuleIndex | None:
    """The project module bound to `local` by `import pkg.mod as local` or `from pkg import
    mod`, or None."""
    if index.project is None or index.path is None:
        return None
    source = index.from_imports.get(local)
    if source is not None:
        module, name, level = source
        path = index.project.resolve(index.path, f"{module}.{name}" if module else name, level)
    else:
        full = index.aliases.get(local, local if local in index.imported else "")
        if not full:
            return None
        path = index.project.resolve(index.path, full, 0)
    return None if path is None else module_index(path)


def definition(index: ModuleIndex, name: str, depth: int = 3) -> tuple[ModuleIndex, ast.AST] | None:
    """The top-level function, class or assignment that `name` refers to in this module,
    following `from x import name` into the project's other modules (and their re-exports)."""
    for node in index.tree.body:
        if (
            isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef))
            and node.name == name
        ):
            return index, node
    for node in reversed(index.tree.body):
        if isinstance(node, (ast.Assign, ast.AnnAssign)) and any(
            isinstance(t, ast.Name) and t.id == name
            for t in (node.targets if isinstance(node, ast.Assign) else [node.target])
        ):
            return index, node
    if depth <= 0:
        return None
    origin = imported_module(index, name)
    if origin is None:
        return None
    target, original = origin
    return definition(target, original, depth - 1)

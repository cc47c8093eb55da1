"""The rules' examples, read from one TOML file a family (rules/<family>/examples.toml).

An example is the evidence a rule must fire on (`fires`) or stay quiet on (`quiet`), written as
the evidence model's own fields, so that the file reads like the situation and the model checks
every name: a misspelt field is an error, not a silent default. The loader fills what a typical
example leaves out, so that each states only what matters:

- a bundle: `tool_version` this version, `created_at` 0, one snapshot at 0 s holding
  `processes` (and `gpus`), then one per `later` entry every `interval_s` (0.5 s); `target_pid`
  the first process (or the log-only pid when there are none); `output` and `kernel` are the
  job record's `output_tail` and `kernel_log`; a `job` record starts at 0;
- a process: `ppid` 1, `name` python, `cmdline` `python train.py`, `state` sleeping,
  `is_python` and `stacks_sampled` true;
- a thread: written flat, its kernel state (`state` S, `syscall_name`, `wchan`, ...) and its
  Python thread (`name`, also the thread's `comm`, `frames` innermost first) side by side;
  `kernel = false` or `python = false` where a thread has none;
- a frame: a relative `file` is in the user's project (/home/alice/project), one that starts
  with `{stdlib}/` or `{site}/` in Python's standard library or its site-packages.

A field whose default is filled but whose value is none is named in `without`.
"""

from __future__ import annotations

import sys
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from functools import cache
from pathlib import Path
from typing import Any, overload

from pydantic import ValidationError

from hangdoctor import __version__
from hangdoctor.evidence.build import SITE, STDLIB, USER
from hangdoctor.evidence.logfiles import LOGS_ONLY_PID
from hangdoctor.evidence.model import Bundle, Frame, ProcessEvidence, ThreadEvidence

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover - Python 3.10
    import tomli as tomllib  # type: ignore[no-redef,import-not-found,unused-ignore]

Table = dict[str, Any]

_RULES = Path(__file__).parent
_INTERVAL_S = 0.5
#: A frame's `file` may start with one of these instead of the folder it stands for.
_PLACES = {"{stdlib}": STDLIB, "{site}": SITE}
_PROCESS_DEFAULTS: Table = {
    "ppid": 1,
    "name": "python",
    "cmdline": ("python", "train.py"),
    "state": "sleeping",
    "is_python": True,
}
_KERNEL_FIELDS = ("state", "wchan", "syscall", "syscall_name", "syscall_args", "cpu_seconds")
_PYTHON_FIELDS = ("thread_id", "name", "active", "owns_gil", "frames")


@dataclass(frozen=True)
class Example:
    """A named piece of evidence for a rule's self-test."""

    name: str
    build: Callable[[], Bundle]


class ExampleError(ValueError):
    """An example in a family's examples.toml that does not describe valid evidence."""


def examples(rule_id: str) -> tuple[Sequence[Example], Sequence[Example]]:
    """The rule's examples to fire on and to stay quiet on, read when first used."""
    return _Examples(rule_id, "fires"), _Examples(rule_id, "quiet")


class _Examples(Sequence[Example]):
    """One kind of a rule's examples; the files are read on first use, not at import."""

    def __init__(self, rule_id: str, kind: str) -> None:
        self.rule_id, self.kind = rule_id, kind

    def _all(self) -> tuple[Example, ...]:
        return all_examples().get(self.rule_id, {}).get(self.kind, ())

    @overload
    def __getitem__(self, index: int) -> Example: ...
    @overload
    def __getitem__(self, index: slice) -> Sequence[Example]: ...
    def __getitem__(self, index: int | slice) -> Example | Sequence[Example]:
        return self._all()[index]

    def __len__(self) -> int:
        return len(self._all())

    def __iter__(self) -> Iterator[Example]:
        return iter(self._all())

    def __repr__(self) -> str:
        return f"examples({self.rule_id!r}).{self.kind}"


def example(rule_id: str, name: str) -> Bundle:
    """The evidence of one of a rule's examples, by its name (for tests that look closer)."""
    kinds = all_examples()[rule_id]
    return next(e for kind in kinds.values() for e in kind if e.name == name).build()


@cache
def all_examples() -> dict[str, dict[str, tuple[Example, ...]]]:
    """Every family file's examples: rule id -> `fires`/`quiet` -> examples, in file order."""
    found: dict[str, dict[str, tuple[Example, ...]]] = {}
    for path in sorted(_RULES.glob("*/examples.toml")):
        with path.open("rb") as handle:
            rules = tomllib.load(handle)
        for rule_id, kinds in rules.items():
            if rule_id in found:
                raise ExampleError(f"{path}: {rule_id} has examples in another file too")
            unknown = set(kinds) - {"fires", "quiet"}
            if unknown:
                raise ExampleError(f"{path}: {rule_id}: unknown kinds {sorted(unknown)}")
            found[rule_id] = {
                kind: tuple(_example(path, rule_id, kind, table) for table in tables)
                for kind, tables in kinds.items()
            }
    return found


def _example(path: Path, rule_id: str, kind: str, table: Table) -> Example:
    name = table.get("name")
    if not isinstance(name, str):
        raise ExampleError(f"{path}: an example of {rule_id} ({kind}) has no name")
    where = f"{path.parent.name}/{path.name}: {rule_id} {kind} '{name}'"
    evidence = {key: value for key, value in table.items() if key != "name"}
    # Checked now, when the file is read: a typo fails every test, not just this example's.
    bundle_of(evidence, where)
    return Example(name, lambda: bundle_of(evidence, where))


def bundle_of(table: Table, where: str = "example") -> Bundle:
    """The bundle an example's table describes (see the module's docstring)."""
    try:
        return Bundle.model_validate(_bundle(dict(table)))
    except (ValidationError, ExampleError, TypeError, KeyError) as error:
        raise ExampleError(f"{where}: {error}") from error


def _bundle(table: Table) -> Table:
    without = _pop_without(table)
    interval = table.pop("interval_s", _INTERVAL_S)
    first = {"processes": table.pop("processes", []), "gpus": table.pop("gpus", [])}
    snapshots = [first, *table.pop("later", [])] if first["processes"] or first["gpus"] else []
    table["snapshots"] = [_snapshot(s, index * interval) for index, s in enumerate(snapshots)]
    output, kernel = table.pop("output", None), table.pop("kernel", None)
    if output is not None or kernel is not None or "job" in table:
        job = {"started_at": 0.0, **table.pop("job", {})}
        job.setdefault("output_tail", output or [])
        job.setdefault("kernel_log", kernel or [])
        table["job"] = job
    pids = [p["pid"] for p in table["snapshots"][0]["processes"]] if table["snapshots"] else []
    defaults = {
        "tool_version": __version__,
        "created_at": 0.0,
        "target_pid": pids[0] if pids else LOGS_ONLY_PID,
    }
    return _with_defaults(table, defaults, without)


def _snapshot(table: Table, at: float) -> Table:
    table = dict(table)
    table["processes"] = [_process(p) for p in table.get("processes", [])]
    return {"elapsed_s": at, "wall_time": at, **table}


def _process(table: Table) -> Table:
    table = dict(table)
    without = _pop_without(table)
    table["threads"] = [_thread(t) for t in table.get("threads", [])]
    process = _with_defaults(table, _PROCESS_DEFAULTS, without)
    process.setdefault("stacks_sampled", bool(process.get("is_python")))
    return ProcessEvidence.model_validate(process).model_dump()


def _thread(table: Table) -> Table:
    table = dict(table)
    without = _pop_without(table)
    has_kernel, has_python = table.pop("kernel", True), table.pop("python", True)
    kernel = {k: table.pop(k) for k in _KERNEL_FIELDS if k in table}
    python = {k: table.pop(k) for k in _PYTHON_FIELDS if k in table}
    defaults: Table = {"comm": python.get("name")}
    if has_kernel:
        table["kernel"] = {"state": "S", **kernel}
    elif kernel:
        raise ExampleError(f"thread {table.get('tid')}: kernel fields with kernel = false")
    if has_python:
        python["frames"] = [_frame(f) for f in python.get("frames", [])]
        table["python"] = python
    elif python:
        raise ExampleError(f"thread {table.get('tid')}: Python fields with python = false")
    return ThreadEvidence.model_validate(_with_defaults(table, defaults, without)).model_dump()


def _frame(table: Table) -> Table:
    file = table.get("file", "")
    for token, folder in _PLACES.items():
        if file.startswith(f"{token}/"):
            file = folder + file[len(token) :]
    if not file.startswith(("/", "<")):
        file = f"{USER}/{file}"
    table = {**table, "file": file}
    return Frame.model_validate(table).model_dump()


def _pop_without(table: Table) -> set[str]:
    without = table.pop("without", [])
    unknown = [name for name in without if name in table]
    if unknown:
        raise ExampleError(f"{unknown} both given and named in `without`")
    return set(without)


def _with_defaults(table: Table, defaults: Table, without: set[str]) -> Table:
    stray = without - set(defaults)
    if stray:
        raise ExampleError(f"`without` names {sorted(stray)}, which have no default to remove")
    filled = {key: value for key, value in defaults.items() if key not in without}
    return {**filled, **table}

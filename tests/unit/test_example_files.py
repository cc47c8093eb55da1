"""The rules' examples files (rules/<family>/examples.toml): what the loader fills in, and that a
mistake in a file is an error rather than an example that tests something else."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

from hangdoctor.evidence import build as b
from hangdoctor.rules.examples import ExampleError, bundle_of
from hangdoctor.rules.registry import ALL_RULES

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover - Python 3.10
    import tomli as tomllib

RULES = Path(b.__file__).parents[1] / "rules"


def test_every_example_belongs_to_a_rule_of_its_familys_folder() -> None:
    files = sorted(RULES.glob("*/examples.toml"))
    assert files
    for path in files:
        family = path.parent.name
        ids = {rule.id for rule in ALL_RULES if rule.category.family == family}
        with path.open("rb") as handle:
            assert set(tomllib.load(handle)) <= ids, path


def test_what_an_example_leaves_out_is_filled_in_as_the_builders_do() -> None:
    table = {
        "processes": [
            {
                "pid": 7,
                "threads": [
                    {
                        "tid": 7,
                        "name": "MainThread",
                        "syscall_name": "futex",
                        "frames": [
                            {"file": "{stdlib}/threading.py", "line": 9, "function": "wait"},
                            {"file": "train.py", "line": 40, "function": "main"},
                        ],
                    }
                ],
            }
        ],
        "later": [{"processes": [{"pid": 7, "without": ["ppid"]}]}],
    }
    frames = (b.frame(f"{b.STDLIB}/threading.py", 9, "wait"), b.frame("train.py", 40, "main"))
    thread = b.thread(7, *frames, name="MainThread", syscall="futex")
    expected = b.bundle(b.process(7, thread), later=[[b.process(7, ppid=None)]])
    assert bundle_of(table) == expected


def test_log_lines_make_a_log_only_bundle() -> None:
    bundle = bundle_of({"output": ["RuntimeError: boom"], "kernel": ["oom-kill"]})
    assert bundle.snapshots == () and bundle.job is not None
    assert bundle.job.output_tail == ("RuntimeError: boom",)
    assert bundle.job.kernel_log == ("oom-kill",)


@pytest.mark.parametrize(
    "table",
    [
        {"processes": [{"pid": 7, "thread": []}]},  # threads, misspelt
        {"processes": [{"pid": 7, "threads": [{"tid": 7, "syscal_name": "futex"}]}]},
        {"processes": [{"pid": 7, "threads": [{"tid": 7, "frames": [{"file": "a.py"}]}]}]},
        {"processes": [{"pid": 7, "ppid": 3, "without": ["ppid"]}]},
        {"job": {"hang_declared": 20.0}},
    ],
    ids=["process field", "thread field", "frame missing", "given and without", "job field"],
)
def test_a_mistake_is_an_error(table: dict[str, object]) -> None:
    with pytest.raises(ExampleError):
        bundle_of(table)

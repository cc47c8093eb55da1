"""Shared hypothesis strategies: JSON values, hostile text, and mutations of real JSON
documents (a bundle, a py-spy dump) that keep most of the shape and break a little of it."""

from __future__ import annotations

import copy
from typing import Any

from hypothesis import strategies as st

#: Numbers that overflow fixed-width fields, lose precision or are not numbers at all.
HUGE = st.sampled_from(
    [2**63, -(2**63) - 1, 10**30, 1e308, -1e308, float("inf"), float("-inf"), float("nan"), -1, 0]
)

SCALARS = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(),
    HUGE,
    st.floats(allow_nan=True, allow_infinity=True),
    st.text(max_size=40),
)

JSON = st.recursive(
    SCALARS,
    lambda children: st.one_of(
        st.lists(children, max_size=4), st.dictionaries(st.text(max_size=12), children, max_size=4)
    ),
    max_leaves=12,
)

#: Lines a hostile or broken job may print: NULs, control bytes, bad UTF-8, very long lines,
#: huge numbers in familiar messages.
HOSTILE_LINES = st.one_of(
    st.binary(max_size=200),
    st.text(max_size=200).map(lambda t: t.encode("utf-8", "surrogatepass")),
    st.sampled_from(
        [
            b"\x00" * 1000,
            b"x" * 300_000,
            b"\xff\xfe" * 50,
            b"\r" * 500,
            b"NCCL WARN Timeout " + b"9" * 5000,
            b"step 99999999999999999999999999 loss nan",
            b"NVRM: Xid (PCI:0000:00:00): 99999999999999999999, pid=-1",
            b"[ 1e308.000000] Out of memory: Killed process 99999999999999999999999",
            b'Traceback (most recent call last):\n  File "\x00", line 1e9, in <module>',
            b"torch.distributed.DistBackendError: NCCL error in: " + b"\xc3" * 100,
            b"[rank" + b"9" * 400 + b"]: RuntimeError: x",
            b"\x1b[31m\x1b[0m\x1b[" + b"9" * 100 + b"m",
        ]
    ),
)


def _alike(value: Any) -> st.SearchStrategy[Any]:
    """A value of the same JSON type as `value`: hostile ones included."""
    if isinstance(value, bool):
        return st.booleans()
    if isinstance(value, int):
        return st.one_of(st.integers(-(2**70), 2**70), st.sampled_from([0, -1, 1, 2**63]))
    if isinstance(value, float):
        return st.floats(allow_nan=False, allow_infinity=False) | st.sampled_from(
            [0.0, -1.0, 1e308]
        )
    if isinstance(value, str):
        return st.text(max_size=60) | st.sampled_from(["", "\x00", "x" * 5000, value * 3])
    if isinstance(value, list):
        return st.permutations(value) if value else st.just([])
    return st.just(value)


def paths(document: Any, prefix: tuple[Any, ...] = ()) -> list[tuple[Any, ...]]:
    """Every path to a value inside a JSON document."""
    found = [prefix]
    if isinstance(document, dict):
        for key, value in document.items():
            found.extend(paths(value, (*prefix, key)))
    elif isinstance(document, list):
        for index, value in enumerate(document):
            found.extend(paths(value, (*prefix, index)))
    return found


@st.composite
def mutated(draw: st.DrawFn, document: Any, max_mutations: int = 4) -> Any:
    """`document` with a few values replaced, deleted or duplicated."""
    result = copy.deepcopy(document)
    for _ in range(draw(st.integers(1, max_mutations))):
        candidates = paths(result)[1:]
        if not candidates:
            break
        path = draw(st.sampled_from(candidates))
        parent = result
        for key in path[:-1]:
            parent = parent[key]
        key = path[-1]
        action = draw(
            st.sampled_from(["alike", "alike", "alike", "replace", "delete", "duplicate"])
        )
        if action == "alike":  # keeps the type, so that most mutants get past validation
            parent[key] = draw(_alike(parent[key]))
        elif action == "replace":
            parent[key] = draw(JSON)
        elif action == "delete":
            del parent[key]
        elif isinstance(parent, list):
            parent.insert(key, copy.deepcopy(parent[key]))
        else:
            parent[key] = [copy.deepcopy(parent[key])] * 2
    return result

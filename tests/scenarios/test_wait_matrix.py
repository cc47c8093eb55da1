"""The wait matrix (wait_matrix.py): its programs are what the generator writes, every primitive
meets every fate (or says why it cannot), and every cell's first try is on record."""

from __future__ import annotations

import pytest

from tests.scenarios.generated import out_of_date
from tests.scenarios.wait_matrix import (
    FATES,
    FOLDER,
    PRIMITIVES,
    expected_files,
    first_tries,
    impossible_cells,
    scenarios,
)

pytestmark = pytest.mark.replay


def test_the_programs_are_what_the_generator_writes():
    assert out_of_date(FOLDER, expected_files()) == [], (
        "run `python tests/scenarios/wait_matrix.py`"
    )


def test_every_primitive_meets_every_fate_or_says_why_not():
    cells = {c.name for c in scenarios()}
    impossible = {(p, f) for p, f, _why in impossible_cells()}
    for primitive in PRIMITIVES:
        for fate in FATES:
            present = f"w_{primitive.name}_{fate}" in cells
            assert present != ((primitive.name, fate) in impossible), (primitive.name, fate)
    assert all(why for _p, _f, why in impossible_cells())


def test_every_cell_has_its_first_try():
    tries = first_tries()
    assert {c.name for c in scenarios()} <= set(tries)
    assert all(c.first_try == tries[c.name] for c in scenarios())

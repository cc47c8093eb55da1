"""The scenario corpus is filed by mechanism and keeps where each program came from: every
hand-written program sits in its family's catalog module, carries the round it was written in,
the blind set stays what it was, and CORPUS.md lists each program under its family."""

from __future__ import annotations

import re
from collections import Counter

import pytest

from tests.scenarios.catalog import CATALOG, LOADED
from tests.scenarios.catalog_algorithm import ALGORITHM
from tests.scenarios.catalog_data import DATA
from tests.scenarios.catalog_distributed import DISTRIBUTED
from tests.scenarios.catalog_env import ENV
from tests.scenarios.catalog_healthy import HEALTHY_CONTROLS
from tests.scenarios.catalog_host import HOST
from tests.scenarios.catalog_native import NATIVE
from tests.scenarios.catalog_process import PROCESS
from tests.scenarios.exception_matrix import scenarios as exception_matrix
from tests.scenarios.scenario import Scenario
from tests.scenarios.wait_matrix import scenarios as wait_matrix
from tests.scenarios.write_readme import HERE

FAMILIES: dict[str, tuple[Scenario, ...]] = {
    "data": DATA,
    "process": PROCESS,
    "native": NATIVE,
    "distributed": DISTRIBUTED,
    "algorithm": ALGORITHM,
    "host": HOST,
    "env": ENV,
    "healthy": HEALTHY_CONTROLS,
}
HAND_WRITTEN = tuple(s for family in FAMILIES.values() for s in family)


def _family(scenario: Scenario) -> str:
    return "healthy" if scenario.healthy else (scenario.category or "").partition(".")[0]


@pytest.mark.parametrize("family", FAMILIES)
def test_each_module_holds_the_programs_of_its_family(family: str) -> None:
    assert FAMILIES[family]
    assert {_family(s) for s in FAMILIES[family]} == {family}


def test_the_catalog_is_the_families_then_the_matrices_then_the_loaded_copies() -> None:
    assert HAND_WRITTEN + exception_matrix() + wait_matrix() + LOADED == CATALOG
    assert len({s.name for s in CATALOG}) == len(CATALOG)


def test_a_name_agrees_with_the_round_it_keeps() -> None:
    for s in HAND_WRITTEN:
        prefix = re.match(r"r(\d+)[abc]_", s.name)
        if prefix:
            assert s.round == int(prefix.group(1)), s.name
        elif s.name.startswith("u_"):
            assert s.round in (3, 4, 5), s.name
        elif s.name.startswith(("jx_", "tf_")):  # issue 30's JAX and TensorFlow programs
            assert s.round == 12, s.name
        else:  # the first programs, written with their rules
            assert s.round is None and s.first_try is None, s.name
    assert all(s.round is None for s in exception_matrix() + wait_matrix())


def test_the_blind_set_stays_identifiable() -> None:
    blind = [s for s in CATALOG if s.blind]
    assert Counter(s.round for s in blind) == {
        6: 9,
        7: 10,
        8: 4,
        9: 4,
        10: 4,
        11: 4,
        12: 8,
        13: 4,
        14: 4,
        15: 4,
        16: 3,
        17: 2,
        18: 2,
        19: 3,
        20: 3,
    }
    assert all(s.first_try is not None for s in blind)  # each ran before any change
    assert not any(s.loaded and s.name.endswith("_loaded") for s in blind)


def test_corpus_md_lists_every_program_under_its_family() -> None:
    text = (HERE / "CORPUS.md").read_text(encoding="utf-8")
    by_mechanism = text.split("\n## By mechanism\n")[1].split("\n## ")[0]
    sections = re.split(r"^### ", by_mechanism, flags=re.MULTILINE)[1:]
    listed: dict[str, tuple[str, str]] = {}
    for section in sections:
        heading = section.splitlines()[0]
        family = "healthy" if heading.startswith("Healthy") else heading.split("`")[1]
        for name, written in re.findall(r"^\| `([a-z0-9_]+)` \| ([^|]+) \|", section, re.M):
            assert name not in listed, name
            listed[name] = (family, written.strip())
    expected = {
        s.name: (
            _family(s),
            ("-" if s.round is None else str(s.round)) + (", blind" if s.blind else ""),
        )
        for s in HAND_WRITTEN
    }
    assert listed == expected

"""The merge tree's shape: places, levels, blocks and leaders (`nodes.tree`)."""

from __future__ import annotations

from hangdoctor.nodes.tree import (
    FAN_IN,
    block,
    block_places,
    first_alive,
    levels,
    places,
    sub_blocks,
)


def test_numbered_nodes_keep_their_number_and_named_ones_are_ordered():
    assert places(["10", "2", "0"]) == {"0": 0, "2": 2, "10": 10}
    assert places(["gpu-b", "gpu-a", "1"]) == {"1": 0, "gpu-a": 1, "gpu-b": 2}


def test_levels_grow_with_the_log_of_the_job():
    assert [levels(n) for n in (1, 2, 64, 65, 4096, 4097, 16384)] == [1, 1, 1, 2, 2, 3, 3]
    assert levels(7, fan_in=2) == 3


def test_a_block_above_is_made_of_the_blocks_below():
    assert block(5461, 1) == 85 and block(5461, 2) == 1 and block(5461, 3) == 0
    assert block_places(85, 1) == range(5440, 5504)
    assert list(sub_blocks(1, 2))[:2] == [64, 65] and len(sub_blocks(1, 2)) == FAN_IN
    # every place of a block at level 2 is in one of its sub-blocks
    covered = {p for index in sub_blocks(1, 2) for p in block_places(index, 1)}
    assert covered == set(block_places(1, 2))


def test_the_first_node_alive_leads_and_a_silent_one_is_passed_over():
    looked: list[str] = []

    def alive(node: str) -> bool:
        looked.append(node)
        return node != "0"

    assert first_alive(["0", "1", "2"], alive) == "1"
    assert looked == ["0", "1"]  # it stops at the first alive
    assert first_alive([], alive) is None

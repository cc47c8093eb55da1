"""A script that sets RANK and WORLD_SIZE itself (`os.environ`), so /proc/PID/environ does not
show them, and waits in init_process_group for a rank 1 that never starts."""

from __future__ import annotations

import socket

import pytest

from tests.conftest import dump, hang_line


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


@pytest.mark.torch
def test_the_missing_rank_is_named(fixture_program, tmp_path):
    pytest.importorskip("torch")
    program = fixture_program("rendezvous_env_set_in_script.py", str(_free_port()), settle_s=2.0)
    report, done = dump(program.pid, tmp_path / "report")
    assert done.returncode == 1, done.stderr
    root = report["findings"][0]
    assert root["category"] == "distributed.rendezvous", root["title"]
    assert "rank(s) 1 never joined" in root["title"]
    assert root["culprit"]["rank"] == 0
    assert root["culprit"]["location"]["line"] == hang_line(
        "rendezvous_env_set_in_script.py", "join"
    )
    assert any("world size 2" in line for line in root["evidence"])

"""`hangdoctor dump` on real programs that hang in known ways: the verdict, the category, the
culprit process, thread and line must be right, and the report must follow the schema."""

from __future__ import annotations

import json

import jsonschema
import pytest

from tests.conftest import dump, hang_line, run_cli


def _root(report: dict) -> dict:
    assert report["findings"], f"no findings; processes: {json.dumps(report['processes'])[:2000]}"
    return report["findings"][0]


def _assert_location(finding: dict, fixture, label: str) -> None:
    location = finding["culprit"]["location"]
    assert location["file"] == str(fixture.path)
    assert location["line"] == hang_line(fixture.path.name, label)


def test_lock_order_deadlock(fixture_program, tmp_path, report_schema):
    program = fixture_program("lock_order_deadlock.py")
    report, done = dump(program.pid, tmp_path)
    assert done.returncode == 1, done.stderr
    jsonschema.validate(report, report_schema)
    assert report["verdict"] == "hung"
    assert report["hang"]["kind"] == "idle"
    root = _root(report)
    assert root["category"] == "process.deadlock"
    # Both threads of the cycle are named, each with the line where it waits.
    involved = [root["culprit"], *root["related"]]
    by_name = {c["thread"].split(" ")[0]: c for c in involved}
    assert set(by_name) == {"trainer", "checkpointer"}
    for name in ("trainer", "checkpointer"):
        assert by_name[name]["pid"] == program.pid
        assert by_name[name]["location"]["line"] == hang_line("lock_order_deadlock.py", name)
    assert any("stats_lock" in line for line in root["evidence"])
    assert any("model_lock" in line for line in root["evidence"])


def test_child_blocked_on_full_pipe(fixture_program, tmp_path, report_schema):
    program = fixture_program("pipe_full_child.py")
    report, done = dump(program.pid, tmp_path)
    assert done.returncode == 1, done.stderr
    jsonschema.validate(report, report_schema)
    root = _root(report)
    assert root["category"] == "process.blocked_io"
    assert root["culprit"]["pid"] == program.pid
    _assert_location(root, program, "parent")
    # The child, a non-Python process, is captured from /proc and named as the other party.
    child = next(p for p in report["processes"] if p["ppid"] == program.pid)
    assert child["python"] is False
    assert child["threads"][0]["syscall"] == "write"
    assert root["related"][0]["pid"] == child["pid"]
    assert any("communicate" in fix for fix in root["fixes"])


def test_socket_read_without_timeout(fixture_program, tmp_path, report_schema):
    program = fixture_program("socket_no_timeout.py")
    report, done = dump(program.pid, tmp_path)
    assert done.returncode == 1, done.stderr
    jsonschema.validate(report, report_schema)
    root = _root(report)
    assert root["category"] == "process.blocked_io"
    _assert_location(root, program, "download")
    assert root["culprit"]["thread"].startswith("MainThread")
    assert any("127.0.0.1:" in line for line in root["evidence"])
    assert any("timeout=" in fix for fix in root["fixes"])


@pytest.mark.parametrize("native", [False, True], ids=["python-stacks", "native-stacks"])
def test_native_call_holding_the_gil(fixture_program, tmp_path, report_schema, native):
    program = fixture_program("native_holds_gil.py")
    report, done = dump(program.pid, tmp_path, *(["--native"] if native else []))
    assert done.returncode == 1, done.stderr
    jsonschema.validate(report, report_schema)
    root = _root(report)
    assert root["category"] == "native.blocked"
    _assert_location(root, program, "native")
    assert any("heartbeat" in line for line in root["evidence"])  # the starved thread
    if native:
        # With native frames the evidence names the C function the Python line called.
        assert any("sleep (libc" in line for line in root["evidence"])


def test_busy_loop(fixture_program, tmp_path, report_schema):
    program = fixture_program("busy_spin.py")
    report, done = dump(program.pid, tmp_path, "--samples", "3", "--interval", "0.4")
    assert done.returncode == 1, done.stderr
    jsonschema.validate(report, report_schema)
    assert report["hang"]["kind"] == "busy"
    root = _root(report)
    assert root["category"] == "process.busy_loop"
    assert root["culprit"]["location"]["function"] == "wait_for_checkpoint"
    assert root["culprit"]["location"]["file"] == str(program.path)


@pytest.mark.torch
def test_dataloader_worker_blocked_in_dataset(fixture_program, tmp_path, report_schema):
    pytest.importorskip("torch")
    program = fixture_program("dataloader_worker_lock.py", "2", settle_s=1.0)
    report, done = dump(program.pid, tmp_path)
    assert done.returncode == 1, done.stderr
    jsonschema.validate(report, report_schema)
    roles = sorted(p["role"] for p in report["processes"])
    assert roles.count("dataloader_worker") == 2
    assert "main" in roles
    root = _root(report)
    assert root["category"] == "data.pipeline_stall"
    worker_pids = {p["pid"] for p in report["processes"] if p["role"] == "dataloader_worker"}
    assert root["culprit"]["pid"] in worker_pids
    assert root["culprit"]["role"] == "dataloader_worker"
    _assert_location(root, program, "worker")
    assert any(
        str(hang_line("dataloader_worker_lock.py", "consumer")) in line for line in root["evidence"]
    )
    assert any("spawn" in fix for fix in root["fixes"])


def test_analyze_reproduces_the_dump(fixture_program, tmp_path):
    program = fixture_program("lock_order_deadlock.py")
    report, _ = dump(program.pid, tmp_path / "dump")
    program.kill()
    done = run_cli("analyze", str(tmp_path / "dump"), "--json")
    assert done.returncode == 1, done.stderr
    again = json.loads(done.stdout)
    assert again["findings"] == report["findings"]
    assert again["verdict"] == report["verdict"]

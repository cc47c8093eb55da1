"""NCCL's RAS report as evidence: the parser on output written from NVIDIA's documented format
(tests/fixtures/nccl_ras/, reconstructed, not recorded on a GPU), the `ncclras` probe with a
stand-in client (found, timed out and killed, absent, refused), and HD318 on parsed reports.
Format: https://docs.nvidia.com/deeplearning/nccl/user-guide/docs/troubleshooting/ras.html"""

from __future__ import annotations

import json
import os
import stat
import subprocess
import sys
import time
from pathlib import Path

import psutil
import pytest

from hangdoctor.analysis.job import JobView
from hangdoctor.evidence import build as b
from hangdoctor.evidence.model import Bundle, JobRecord, RasRank, RasReport
from hangdoctor.probes import nccl_ras
from hangdoctor.probes.nccl_ras_output import clip, parse, parse_json, parse_text
from hangdoctor.rules.distributed.ras_missing_ranks import RasMissingRanks
from hangdoctor.severity import Severity
from tests.conftest import REPO

FIXTURES = REPO / "tests" / "fixtures" / "nccl_ras"


def recorded(name: str) -> str:
    """A fixture without its `;;` header."""
    lines = (FIXTURES / name).read_text().splitlines(keepends=True)
    return "".join(line for line in lines if not line.startswith(";;"))


def test_every_fixture_says_it_is_reconstructed_from_the_documentation() -> None:
    for path in FIXTURES.iterdir():
        head = path.read_text()[:600]
        assert "Reconstructed from NVIDIA's documentation" in head, path.name
        assert "not recorded on a GPU" in head and nccl_ras.RAS_DOCS in head, path.name


# --- the parser ------------------------------------------------------------------------------


def test_a_process_that_sent_no_data_is_named_with_its_rank_node_and_gpu() -> None:
    report = parse_text(recorded("missing_rank.txt"))
    assert report.nccl_version == "2.24.3+cuda12.6"
    assert report.unresponsive == (RasRank(pid=48213, host="10.0.0.12", cuda_devices=(2,)),)
    assert report.unresponsive_count == 1 and report.dead_count == 0
    assert report.timeouts == 1
    (comm,) = report.communicators
    assert comm.hash == "9f3c2a1b7e5d4c08"
    assert comm.missing == (RasRank(rank=6, host="10.0.0.12", pid=48213, cuda_devices=(2,)),)
    assert comm.launches == ()


def test_a_dead_process_marks_its_rank_dead() -> None:
    report = parse_text(recorded("dead_process.txt"))
    assert report.dead == (RasRank(pid=51877, host="10.0.0.14", cuda_devices=(3,), dead=True),)
    assert report.dead_count == 1 and report.unresponsive == ()
    (comm,) = report.communicators
    assert comm.missing == (
        RasRank(rank=27, host="10.0.0.14", pid=51877, cuda_devices=(3,), dead=True),
    )


def test_launch_counts_name_the_single_rank_behind() -> None:
    (comm,) = parse_text(recorded("launch_mismatch.txt")).communicators
    assert [(c.operation, c.launched, c.rank_count) for c in comm.launches] == [
        ("AllReduce", 12408, 7),
        ("AllReduce", 12407, 1),
    ]
    assert comm.launches[0].ranks == ()  # the majority is counted, not listed
    assert comm.launches[1].ranks == (
        RasRank(rank=5, host="10.0.0.11", pid=30117, cuda_devices=(5,)),
    )


def test_ranks_listed_after_a_count_line_belong_to_that_count() -> None:
    (comm,) = parse_text(recorded("launch_mismatch_group.txt")).communicators
    behind = comm.launches[1]
    assert (behind.launched, behind.rank_count) == (6634, 6)
    assert [r.rank for r in behind.ranks] == [16, 17, 18, 19, 20, 21]
    assert {r.host for r in behind.ranks} == {"10.0.0.23"}


def test_a_healthy_job_has_nothing_to_say() -> None:
    report = parse_text(recorded("healthy.txt"))
    assert report.communicators == () and report.unresponsive == () and report.dead == ()
    assert report.nccl_version == "2.24.3+cuda12.6"
    assert "Job summary" in report.text


def test_errors_ranks_reported_are_kept_per_rank() -> None:
    """An ERROR block, one rank alone and a group, as RAS lists them."""
    text = (
        "Errors\n======\n\n"
        "#0-0 (c41d9e0a6f2b7385) ERROR\n"
        "  Asynchronous error on 1 rank\n"
        "  Rank 3 reported Remote process error -- GPU 3 managed by process 4321 on node 10.0.0.1\n"
        "\n"
        "#1-0 (0d7a4c19e8b2f650) ERROR\n"
        "  Initialization errors on 2 ranks\n"
        "  2 ranks reported System error\n"
        "  Rank 1 -- GPU 1 managed by process 4319 on node 10.0.0.1\n"
        "  Rank 2 -- [process information not found]\n"
    )
    first, second = parse_text(text).communicators
    assert first.errors == ("rank 3: asynchronous error Remote process error",)
    assert second.errors == (
        "rank 1: initialization error System error",
        "rank 2: initialization error System error",
    )


def test_json_missing_ranks_and_the_processes_behind_them() -> None:
    report = parse(recorded("missing_rank.json"))
    assert report.format == "json" and report.nccl_version == "2.28.3+cuda12.9"
    (comm,) = report.communicators
    assert comm.size == 8
    assert comm.missing == (RasRank(rank=6, host="10.0.0.12", pid=48213, cuda_devices=(2,)),)
    assert comm.launches == ()  # every rank that answered launched as many
    assert report.unresponsive == (RasRank(host="10.0.0.12", pid=48213, cuda_devices=(2,)),)
    assert report.timeouts == 1


def test_json_launch_counts_group_every_rank() -> None:
    (comm,) = parse(recorded("launch_mismatch.json")).communicators
    assert [(c.launched, c.rank_count, [r.rank for r in c.ranks]) for c in comm.launches] == [
        (812, 3, [0, 1, 3]),
        (811, 1, [2]),
    ]


def test_json_that_is_not_the_report_is_none_and_text_is_read_anyway() -> None:
    assert parse_json('{"something": 1}') is None
    assert parse_json("{ broken") is None
    assert parse("{ broken").format == "text"


def test_long_output_keeps_its_beginning_and_end() -> None:
    text = "A" * 20_000 + "Z" * 20_000
    clipped = clip(text, limit=1000)
    assert clipped.startswith("A" * 500) and clipped.endswith("Z" * 500)
    assert "characters left out" in clipped and len(clipped) < 1100


def test_a_bundle_without_the_field_still_loads() -> None:
    bundle = b.bundle(b.process(7, b.thread(7)))
    raw = json.loads(bundle.model_dump_json())
    del raw["nccl_ras"]
    assert Bundle.model_validate(raw).nccl_ras is None


# --- the probe -------------------------------------------------------------------------------


def fake_client(tmp_path: Path, body: str) -> str:
    """An executable `ncclras` stand-in running the shell `body`."""
    path = tmp_path / "bin" / "ncclras"
    path.parent.mkdir(exist_ok=True)
    path.write_text(f"#!/bin/sh\n{body}\n")
    path.chmod(path.stat().st_mode | stat.S_IXUSR)
    return str(path)


def test_the_client_is_found_on_path_or_next_to_libnccl(tmp_path: Path) -> None:
    assert nccl_ras.find_client([str(tmp_path)], []) is None
    client = fake_client(tmp_path, "exit 0")
    assert nccl_ras.find_client(["", str(tmp_path / "bin")], []) == client
    library = tmp_path / "lib" / "libnccl.so.2"
    assert nccl_ras.find_client(["/nonexistent"], [str(library)]) == client


def test_nccl_ras_addr_becomes_the_clients_arguments() -> None:
    assert nccl_ras.address_args({}) == []
    assert nccl_ras.address_args({"NCCL_RAS_ADDR": "10.1.2.3:30000"}) == [
        "-h",
        "10.1.2.3",
        "-p",
        "30000",
    ]
    assert nccl_ras.address_args({"NCCL_RAS_ADDR": "[::1]:28029"}) == ["-h", "::1", "-p", "28029"]
    assert nccl_ras.address_args({"NCCL_RAS_ADDR": "localhost"}) == ["-h", "localhost"]


def test_the_report_is_read_with_a_peer_time_limit(tmp_path: Path) -> None:
    (tmp_path / "out.txt").write_text(recorded("missing_rank.txt"))
    args = tmp_path / "args"
    client = fake_client(tmp_path, f'echo "$@" > {args}; cat {tmp_path / "out.txt"}')
    report, error = nccl_ras.query(client, {"NCCL_RAS_ADDR": "127.0.0.1:29000"})
    assert error is None and report is not None
    assert report.unresponsive_count == 1
    assert args.read_text().split() == ["-t", "3", "-h", "127.0.0.1", "-p", "29000"]


def test_a_client_of_nccl_2_28_is_asked_for_json(tmp_path: Path) -> None:
    (tmp_path / "out.json").write_text(recorded("launch_mismatch.json"))
    args = tmp_path / "args"
    client = fake_client(
        tmp_path,
        f'if [ "$1" = --version ]; then echo "NCCL RAS client version 2.28.3+cuda12.9" >&2;'
        f' exit 0; fi; echo "$@" > {args}; cat {tmp_path / "out.json"}',
    )
    version = nccl_ras.client_version(client)
    assert version == (2, 28)
    report, error = nccl_ras.query(client, {}, version=version)
    assert error is None and report is not None and report.format == "json"
    assert args.read_text().split()[-2:] == ["-f", "json"]


def test_no_ras_service_listening_is_no_evidence_and_no_gap(tmp_path: Path) -> None:
    client = fake_client(
        tmp_path,
        'echo "Connecting to 127.0.0.1:28028: Connection refused" >&2;'
        ' echo "Failed to connect to the NCCL RAS service!" >&2; exit 1',
    )
    assert nccl_ras.query(client, {}) == (None, None)


def test_another_failure_is_a_stated_gap(tmp_path: Path) -> None:
    client = fake_client(tmp_path, 'echo "NCCL unexpectedly closed the connection" >&2; exit 1')
    report, error = nccl_ras.query(client, {})
    assert report is None and error is not None
    assert error.kind == "failed" and "unexpectedly closed" in error.message


def _gone(pid: int) -> bool:
    try:
        return psutil.Process(pid).status() == psutil.STATUS_ZOMBIE
    except psutil.NoSuchProcess:
        return True


def test_a_client_that_never_answers_is_killed_with_its_children(tmp_path: Path) -> None:
    client = fake_client(
        tmp_path,
        f"echo $$ > {tmp_path / 'pid'}; sleep 60 & echo $! > {tmp_path / 'child'}; wait",
    )
    started = time.monotonic()
    report, error = nccl_ras.query(client, {}, timeout_s=0.5)
    assert time.monotonic() - started < 5
    assert report is None and error is not None
    assert error.kind == "timeout" and error.probe == "nccl ras" and error.help
    assert "did not answer" in error.message
    pids = [int((tmp_path / name).read_text()) for name in ("pid", "child")]
    deadline = time.monotonic() + 5
    while not all(_gone(pid) for pid in pids) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert all(_gone(pid) for pid in pids)


def _unreadable_job() -> Bundle:
    """A bundle whose process is gone: its maps cannot be read, so NCCL use is unknown."""
    return b.bundle(b.process(2**22 + 12345, b.thread(2**22 + 12345)))


def test_the_capture_gets_the_report_when_a_client_answers(tmp_path: Path) -> None:
    (tmp_path / "out.txt").write_text(recorded("missing_rank.txt"))
    fake_client(tmp_path, f"cat {tmp_path / 'out.txt'}")
    bundle = nccl_ras.with_nccl_ras(_unreadable_job(), {"PATH": str(tmp_path / "bin")})
    assert bundle.nccl_ras is not None and bundle.nccl_ras.unresponsive_count == 1
    assert bundle.nccl_ras.same_job is None  # RAS placed no rank on this host
    assert "nccl ras" in bundle.timings_s and bundle.errors == ()


def test_a_job_that_mapped_libnccl_is_asked_through_the_client_beside_it(tmp_path: Path) -> None:
    """A process that maps a file named libnccl (as a rank that loaded NCCL does); the client
    sits in the library's ../bin, on no PATH."""
    library = tmp_path / "nccl" / "lib" / "libnccl.so.2"
    library.parent.mkdir(parents=True)
    library.write_bytes(b"\0" * 4096)
    (tmp_path / "out.txt").write_text(recorded("launch_mismatch.txt"))
    client = tmp_path / "nccl" / "bin" / "ncclras"
    client.parent.mkdir()
    client.write_text(f"#!/bin/sh\ncat {tmp_path / 'out.txt'}\n")
    client.chmod(0o755)
    code = (
        "import mmap, sys, time\n"
        f"f = open({str(library)!r}, 'rb')\n"
        "m = mmap.mmap(f.fileno(), 0, prot=mmap.PROT_READ)\n"
        "print('ready', flush=True)\n"
        "time.sleep(60)\n"
    )
    with subprocess.Popen([sys.executable, "-c", code], stdout=subprocess.PIPE, text=True) as rank:
        try:
            assert rank.stdout is not None and rank.stdout.readline().strip() == "ready"
            assert nccl_ras.nccl_libraries([rank.pid]) == ({str(library)}, True)
            bundle = b.bundle(b.process(rank.pid, b.thread(rank.pid)))
            found = nccl_ras.with_nccl_ras(bundle, {"PATH": str(tmp_path / "nowhere")})
        finally:
            rank.kill()
    assert found.nccl_ras is not None
    (finding,) = RasMissingRanks().check(JobView(found))
    assert "rank 5" in finding.title


def test_without_a_client_the_capture_is_unchanged(tmp_path: Path) -> None:
    bundle = _unreadable_job()
    assert nccl_ras.with_nccl_ras(bundle, {"PATH": str(tmp_path)}) == bundle


def test_a_job_that_loaded_no_nccl_is_not_asked(tmp_path: Path) -> None:
    fake_client(tmp_path, f"touch {tmp_path / 'asked'}")
    bundle = b.bundle(b.process(os.getpid(), b.thread(os.getpid())))  # this test: no libnccl
    assert nccl_ras.with_nccl_ras(bundle, {"PATH": str(tmp_path / "bin")}) == bundle
    assert not (tmp_path / "asked").exists()


def test_ras_switched_off_in_the_job_is_not_asked(tmp_path: Path) -> None:
    fake_client(tmp_path, f"touch {tmp_path / 'asked'}")
    env = {"PATH": str(tmp_path / "bin"), "NCCL_RAS_ENABLE": "0"}
    assert nccl_ras.with_nccl_ras(_unreadable_job(), env) == _unreadable_job()
    assert not (tmp_path / "asked").exists()


def test_the_ranks_ras_places_here_must_be_this_jobs() -> None:
    report = parse_text(recorded("launch_mismatch.txt"))  # rank 5: pid 30117 on 10.0.0.11
    assert nccl_ras.same_job(report, {"10.0.0.11"}, {30117}) is True
    assert nccl_ras.same_job(report, {"10.0.0.11"}, {4242}) is False
    assert nccl_ras.same_job(report, {"10.9.9.9"}, {4242}) is None


# --- HD318 on parsed reports -------------------------------------------------------------------


def _findings(report: RasReport) -> list:
    bundle = b.bundle(b.process(7, b.thread(7))).model_copy(update={"nccl_ras": report})
    return list(RasMissingRanks().check(JobView(bundle)))


@pytest.mark.parametrize(
    ("fixture", "words"),
    [
        ("missing_rank.txt", ["rank 6", "10.0.0.12", "48213", "sent no data"]),
        ("missing_rank.json", ["rank 6", "10.0.0.12", "48213", "GPU 2"]),
        ("dead_process.txt", ["rank 27", "10.0.0.14", "considered dead"]),
        ("launch_mismatch.txt", ["rank 5", "fewest AllReduce", "12407", "12408"]),
        ("launch_mismatch_group.txt", ["ranks 16-21", "6634", "6650 on 26 ranks"]),
        ("launch_mismatch.json", ["rank 2", "811", "812 on 3 ranks"]),
    ],
)
def test_hd318_names_the_rank_in_each_recorded_report(fixture: str, words: list[str]) -> None:
    (finding,) = _findings(parse(recorded(fixture)))
    for word in words:
        assert word in finding.title
    assert finding.culprit is not None and finding.culprit.rank is not None
    assert finding.culprit.pid is None  # not a process of this capture


def test_hd318_is_quiet_on_a_healthy_report() -> None:
    assert _findings(parse(recorded("healthy.txt"))) == []


def test_counts_that_differ_on_a_job_seen_running_are_a_warning() -> None:
    """Ranks launch asynchronously: without a declared hang or a rank seen waiting in a
    collective, differing counts may be a passing moment."""
    report = parse(recorded("launch_mismatch.txt"))
    (running,) = _findings(report)
    assert running.severity is Severity.WARNING and "ask again" in running.explanation
    bundle = b.bundle(b.process(7, b.thread(7))).model_copy(
        update={
            "nccl_ras": report,
            "job": JobRecord(started_at=0.0, hang_declared_s=300.0, hang_kind="idle"),
        }
    )
    (hung,) = RasMissingRanks().check(JobView(bundle))
    assert hung.severity is Severity.ERROR


def test_a_probe_that_breaks_is_a_gap_not_a_lost_capture(monkeypatch: pytest.MonkeyPatch) -> None:
    def broken(pids: object) -> object:
        raise RuntimeError("maps unreadable in an odd way")

    monkeypatch.setattr(nccl_ras, "nccl_libraries", broken)
    bundle = nccl_ras.with_nccl_ras(_unreadable_job(), {})
    (gap,) = bundle.errors
    assert gap.probe == "nccl ras" and gap.kind == "failed" and "odd way" in gap.message

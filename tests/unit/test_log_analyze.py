"""`hangdoctor analyze FILE...` on logs of real failures (tests/fixtures/logs/, written in the
exact formats PyTorch, NCCL, the NVIDIA driver and the kernel print), run as a user runs it."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import jsonschema
import pytest

from hangdoctor.evidence.logfiles import classify, read_log_file, split_redraws
from tests.conftest import FIXTURES, run_cli

LOGS = FIXTURES / "logs"


def analyze(
    *paths: Path | str, extra: tuple[str, ...] = ()
) -> tuple[dict, subprocess.CompletedProcess]:
    """`hangdoctor analyze PATH... --json` in a subprocess: the report and the result."""
    done = run_cli("analyze", *map(str, paths), "--json", *extra)
    assert "Traceback" not in done.stderr, done.stderr
    return json.loads(done.stdout), done


@pytest.mark.parametrize(
    ("log", "category", "evidence"),
    [
        ("torchrun_nccl_timeout.log", "distributed.collective_timeout", "WorkNCCL(SeqNum=6121"),
        ("dmesg_xid79.txt", "gpu.device_fault", "NVRM: Xid (PCI:0000:3b:00): 79"),
        ("train_nan.log", "algorithm.nonfinite", "step 4170 | loss nan"),
        (
            "import_undefined_symbol.log",
            "env.library_mismatch",
            "flash_attn_2_cuda.cpython-310-x86_64-linux-gnu.so: undefined symbol: _ZN3c105Error",
        ),
        ("glibc_mismatch.log", "env.library_mismatch", "version `GLIBC_2.34' not found"),
        (
            "shm_bus_error.log",
            "data.worker_killed",
            "unable to write to file </torch_2817_1375466711_3>: No space left on device",
        ),
        # Formats seen in https://github.com/pytorch/pytorch/pull/140969 (fr_trace),
        # https://github.com/modelscope/ms-swift/issues/8043 (NCCL connection refused),
        # https://github.com/zai-org/CogVLM2/issues/178 (unhandled system error),
        # https://github.com/hiyouga/LlamaFactory/issues/6953 (heartbeat monitor),
        # https://github.com/chrisknewman/tusas/issues/149 (Slurm's cgroup OOM kill).
        (
            "fr_trace_missing_ranks.log",
            "distributed.collective_mismatch",
            "Not all ranks joining collective: sequence number: 4812",
        ),
        ("nccl_connection_refused.log", "distributed.network", "returned Connection refused"),
        ("nccl_unhandled_system_error.log", "distributed.network", "unhandled system error"),
        (
            "nccl_heartbeat_abort.log",
            "distributed.collective_timeout",
            "Heartbeat monitor timed out!",
        ),
        (
            "slurm_cgroup_oom.log",
            "host.memory_exhausted",
            "Detected 1 oom_kill event in StepId=5512873.0",
        ),
    ],
)
def test_a_real_failure_log_is_diagnosed(log, category, evidence, report_schema):
    report, done = analyze(LOGS / log)
    assert done.returncode == 1
    jsonschema.validate(report, report_schema)
    assert report["verdict"] == "failed"
    root = report["findings"][0]
    assert root["category"] == category, [f["title"] for f in report["findings"]]
    assert any(evidence in line for line in root["evidence"]), root["evidence"]
    assert root["fixes"]


def test_the_new_formats_name_who_and_where():
    fr = analyze(LOGS / "fr_trace_missing_ranks.log")[0]["findings"][0]
    assert fr["culprit"]["rank"] == 2
    assert fr["culprit"]["location"]["line"] == 214 and "all_reduce #4812" in fr["title"]
    heartbeat = analyze(LOGS / "nccl_heartbeat_abort.log")[0]["findings"][0]
    assert heartbeat["culprit"]["rank"] == 3
    oom = analyze(LOGS / "slurm_cgroup_oom.log")[0]["findings"][0]
    assert "5512873.0 " in oom["title"] and "gpu-node-12" in oom["title"]
    refused = analyze(LOGS / "nccl_connection_refused.log")[0]["findings"][0]
    assert "10.12.0.31:52597" in refused["title"]


def test_the_rank_that_is_behind_is_named():
    report, _ = analyze(LOGS / "torchrun_nccl_timeout.log")
    root = report["findings"][0]
    assert root["culprit"]["rank"] == 3
    assert "rank 3 is behind" in root["title"] and "SeqNum=6123" in root["title"]
    assert any("TORCH_NCCL_TRACE_BUFFER_SIZE" in fix for fix in root["fixes"])
    # The ranks aborted by the watchdog are its consequence, not a second root cause.
    assert {f["category"] for f in report["findings"]} == {"distributed.collective_timeout"}


def test_each_log_says_what_matters():
    xid = analyze(LOGS / "dmesg_xid79.txt")[0]["findings"][0]
    assert xid["severity"] == "critical" and "Xid 79" in xid["title"]
    assert any("drain" in fix.lower() for fix in xid["fixes"])
    nan = analyze(LOGS / "train_nan.log")[0]["findings"][0]
    assert "step 4170" in nan["title"]
    assert any("climbed from 1.9842" in line for line in nan["evidence"])
    glibc = analyze(LOGS / "glibc_mismatch.log")[0]["findings"][0]
    assert "GLIBC_2.34" in glibc["title"] and "libbitsandbytes_cuda121" in glibc["title"]
    symbol = analyze(LOGS / "import_undefined_symbol.log")[0]["findings"]
    assert "flash_attn_2_cuda" in symbol[0]["title"]
    assert "PyTorch" in symbol[0]["explanation"]
    # The rank died of that import error: nothing else is the cause.
    assert all(f["category"] != "distributed.rank_exited" for f in symbol)
    shm = analyze(LOGS / "shm_bus_error.log")[0]["findings"][0]
    assert any("--shm-size" in fix for fix in shm["fixes"])


def test_job_log_and_kernel_log_together():
    report, done = analyze(LOGS / "torchrun_nccl_timeout.log", LOGS / "dmesg_xid79.txt")
    assert done.returncode == 1
    categories = [f["category"] for f in report["findings"]]
    # The GPU that fell off the bus explains the collective that never finished.
    assert categories[0] == "gpu.device_fault"
    assert "distributed.collective_timeout" in categories
    sources = {Path(s["path"]).name: s for s in report["capture"]["logs"]}
    assert sources["dmesg_xid79.txt"]["kernel_lines"] > 10
    assert sources["dmesg_xid79.txt"]["output_lines"] == 0
    assert sources["torchrun_nccl_timeout.log"]["kernel_lines"] == 0


def test_a_clean_log_completes(tmp_path):
    log = tmp_path / "train.log"
    log.write_text("step 10 loss 2.31\nstep 20 loss 2.12\nINFO saved checkpoint\n")
    report, done = analyze(log)
    assert done.returncode == 0
    assert report["verdict"] == "completed" and report["findings"] == []


def test_a_missing_file_is_one_line_and_exit_2(tmp_path):
    done = run_cli("analyze", str(LOGS / "train_nan.log"), str(tmp_path / "nope.log"))
    assert done.returncode == 2
    assert done.stderr.strip().splitlines() == [
        f"hangdoctor: error: {tmp_path / 'nope.log'} does not exist"
    ]
    assert "Traceback" not in done.stderr + done.stdout


def test_secrets_in_logs_are_redacted(tmp_path):
    url_password, token = "s3cr3t-pass", "hf_" + "AbCdEfGhIjKlMnOpQrStUvWxYz012345"
    log = tmp_path / "train.log"
    log.write_text(
        f"HF_TOKEN={token} python train.py\n"
        "step 100 loss 2.31\n"
        f"step 110 loss nan tracking=https://alice:{url_password}@mlflow.example.com/run/7\n"
    )
    report_dir = tmp_path / "report"
    report, done = analyze(log, extra=("--report-dir", str(report_dir)))
    assert done.returncode == 1
    assert report["findings"][0]["category"] == "algorithm.nonfinite"
    assert any("<redacted>" in line for line in report["findings"][0]["evidence"])
    for text in (
        done.stdout,
        (report_dir / "report.json").read_text(),
        (report_dir / "report.md").read_text(),
        (report_dir / "evidence.json").read_text(),
    ):
        assert url_password not in text and token not in text


def test_a_capture_and_more_logs(tmp_path):
    # A log-only report directory can be analysed again, with another log added to it.
    analyze(LOGS / "torchrun_nccl_timeout.log", extra=("--report-dir", str(tmp_path / "r")))
    report, done = analyze(tmp_path / "r", LOGS / "dmesg_xid79.txt")
    assert done.returncode == 1 and report["verdict"] == "failed"
    assert [f["category"] for f in report["findings"]][:2] == [
        "gpu.device_fault",
        "distributed.collective_timeout",
    ]
    done = run_cli("analyze", str(tmp_path / "r"), str(tmp_path / "r" / "evidence.json"))
    assert done.returncode == 2 and "one capture at a time" in done.stderr


# --- reading log files ------------------------------------------------------------------------
def test_progress_bar_redraws_are_collapsed():
    raw = "ep 1:  10%|#  | 10/100 [00:01<00:09]\rep 1:  20%|## | 20/100 [00:02<00:08]"
    assert split_redraws(raw) == ["ep 1:  20%|## | 20/100 [00:02<00:08]"]
    raw = "ep 1:  10%|#  | 10/100 [00:01<00:09]\rRuntimeError: boom\rep 1:  11%|#  | 11/100"
    assert split_redraws(raw) == ["RuntimeError: boom", "ep 1:  11%|#  | 11/100"]


def test_kernel_lines_are_told_from_the_others():
    output, kernel = classify(
        [
            "step 5 loss 2.0",
            "Mar 01 10:34:50 gpu-node-17 kernel: NVRM: Xid (PCI:0000:3b:00): 79, pid=1, name=p, x",
            "[ 2211.402118] Out of memory: Killed process 41901 (python3) total-vm:1kB",
            "Triton kernel: compiled in 3 s",
            "step 6 loss 1.9",
        ]
    )
    assert output == ["step 5 loss 2.0", "Triton kernel: compiled in 3 s", "step 6 loss 1.9"]
    assert len(kernel) == 2
    # A dmesg file keeps its continuation lines with it.
    output, kernel = classify((LOGS / "dmesg_xid79.txt").read_text().splitlines())
    assert output == [] and kernel[-1].strip() == "NVRM: the NVIDIA kernel module is unloaded."


def test_only_the_tail_of_a_big_file_is_read(tmp_path):
    log = tmp_path / "big.log"
    with log.open("wb") as handle:
        handle.write(b"old line that is cut\n" * 1000)
        handle.write(b"\xff\xfe binary garbage \x00 survives\n")
        handle.write(b"RuntimeError: DataLoader timed out after 60 seconds\n")
    read = read_log_file(log, tail_bytes=100)
    assert read.truncated and read.size_bytes > 100
    assert read.output[-1] == "RuntimeError: DataLoader timed out after 60 seconds"
    assert "survives" in read.output[-2] and "\ufffd" in read.output[-2]
    assert all("cut" in line for line in read.output[:-2])  # no half line at the start


@pytest.mark.parametrize(
    ("log", "holds", "rank"),
    [
        # torchrun's summary lists rank 0, ended by its closing SIGTERM before it could raise,
        # as the root cause of rank 1's exception (both in one second, the summary's order a
        # race). A real run of u_ddp_modality_router, rank 0's traceback taken out and its
        # summary entry written as torchrun writes a SIGTERM: rank 1's raise is the cause.
        ("torchrun_sigterm_listed_first.log", "Signal 15 (SIGTERM) received by PID 2104", 1),
        # A real run of u_ddp_modality_router (CI's live suite once failed on it): rank 1's
        # `print()` wrote its text, rank 0's `[rank0]: Traceback (most recent call last):`
        # landed before rank 1's newline, so the header's prefix stood mid-line and rank 0's
        # traceback was lost (rank 0 named at no line). The header belongs to the prefix
        # behind the text.
        (
            "torchrun_header_behind_unfinished_line.log",
            "2.2993[rank0]: Traceback (most recent call last):",
            0,
        ),
    ],
)
def test_two_ranks_that_raised_in_one_instant_are_told_apart(log, holds, rank):
    """Which rank's traceback comes first in the log, and which one torchrun names, is a
    race: the rank that raised is named at its line, whatever the order."""
    assert holds in (LOGS / log).read_text()
    report, done = analyze(LOGS / log)
    assert done.returncode == 1
    root = report["findings"][0]
    assert root["category"] == "process.exception"  # its own exception, on its rank
    assert root["culprit"]["rank"] == rank
    assert root["culprit"]["location"]["line"] == 61
    assert "Expected to have finished reduction" in root["title"]

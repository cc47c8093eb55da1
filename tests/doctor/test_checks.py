"""The checks as a whole, and what their examples do not pin down: the exact advice, sources,
whole recorded inputs (a GPU node's kernel log, NVML readings in nvidia-ml-py's shape), the
order of results and the exit code they imply. Each check's statuses are tested from its own
examples (test_check_examples.py)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from pydantic import ValidationError

from hangdoctor.doctor.checks import AREAS, run_checks
from hangdoctor.doctor.facts import Gpus, KernelLog, SelftestResult
from hangdoctor.doctor.probe_gpu import devices_from_readings
from hangdoctor.doctor.result import CheckResult, exit_code, overall
from hangdoctor.errors import ExitCode
from hangdoctor.severity import Severity
from tests.doctor.factories import by_id, node, one, results_of

FIXTURES = Path(__file__).parent / "fixtures"
MIB = 1024**2


def test_a_healthy_node_is_all_well():
    results = run_checks(node())
    assert overall(results) == "ok", [r for r in results if r.status in ("warn", "problem")]
    assert exit_code(results, strict=True) == ExitCode.OK


def test_warnings_fail_only_a_strict_run_and_problems_always():
    warned = run_checks(node(limits={"somaxconn": 128}))
    assert overall(warned) == "warn"
    assert exit_code(warned) == ExitCode.OK
    assert exit_code(warned, strict=True) == ExitCode.PROBLEM_FOUND
    broken = run_checks(node(limits={"somaxconn": 128, "world_size": 512}))
    assert overall(broken) == "problem"
    assert exit_code(broken) == exit_code(broken, strict=True) == ExitCode.PROBLEM_FOUND


def test_severity_follows_status_and_cannot_contradict_it():
    mapping = {
        "problem": Severity.ERROR,
        "warn": Severity.WARNING,
        "info": Severity.INFO,
        "ok": Severity.INFO,
        "skipped": Severity.INFO,
    }
    for status, severity in mapping.items():
        result = CheckResult(id="DR201", area="os_limits", status=status, title="t")
        assert result.severity is severity
        assert CheckResult.model_validate_json(result.model_dump_json()) == result
    with pytest.raises(ValidationError, match="does not match status"):
        CheckResult.model_validate(
            {
                "id": "DR201",
                "area": "os_limits",
                "status": "problem",
                "severity": "info",
                "title": "t",
            }
        )


def test_dev_shm_advice_names_the_container_settings():
    facts = node(limits={"shm_total_bytes": 64 * MIB, "shm_free_bytes": 64 * MIB})
    result = one(results_of("DR205", facts), "DR205")
    assert result.status == "problem"
    assert "--shm-size=2g" in result.fix and "--ipc=host" in result.fix
    assert (result.found, result.wanted) == (
        "64 MiB (64 MiB free)",
        ">= 2.0 GiB for 8 DataLoader workers",
    )


def test_open_files_raised_up_to_the_hard_limit():
    result = one(
        results_of("DR203", node(limits={"nofile_soft": 1024, "nofile_hard": 4096})), "DR203"
    )
    assert result.fix.startswith("ulimit -n 4096")


def test_locked_memory_names_the_rdma_devices():
    facts = node(limits={"memlock_soft": 8 * MIB, "rdma_devices": ("mlx5_0", "mlx5_1")})
    assert "mlx5_0, mlx5_1" in one(results_of("DR204", facts), "DR204").why


@pytest.mark.parametrize(("driver", "status"), [("535.161.08", "warn"), ("470.82.01", "problem")])
def test_cuda_runtime_against_driver_cites_nvidias_table(driver, status):
    facts = node(versions={"torch": "2.4.0", "torch_cuda": "12.4", "driver": driver})
    result = one(results_of("DR102", facts), "DR102")
    # 535 runs CUDA 12.4 only through minor-version compatibility; 470 not at all.
    assert result.status == status
    assert result.wanted.startswith(">= 550.54.14")
    assert result.source and "cuda-toolkit-release-notes" in result.source


def test_nvcc_major_mismatch_cites_cpp_extension():
    facts = node(versions={"torch": "2.4.0", "torch_cuda": "12.1", "nvcc": "13.0"})
    result = one(results_of("DR103", facts), "DR103")
    assert "cpp_extension" in (result.source or "") and "CUDA_HOME" in result.fix


def test_known_bad_combination_comes_from_the_data_file():
    facts = node(versions={"torch": "1.5.0", "torch_cuda": "10.2", "nvcc": "10.2"})
    result = one(results_of("DR104", facts), "DR104")
    assert result.source == "https://github.com/pytorch/pytorch/issues/33203"
    assert result.found == "torch_cuda 10.2, nvcc 10.2"


def test_stale_extension_lock_fix_removes_that_lock():
    lock = "/root/.cache/torch_extensions/py311_cu121/fused_adam/lock"
    result = one(results_of("DR105", node(versions={"torch_extension_locks": (lock,)})), "DR105")
    assert result.fix == f"If no build is running: `rm {lock}`"


def _kernel_results() -> list[CheckResult]:
    lines = tuple((FIXTURES / "dmesg_gpu_node.txt").read_text().splitlines())
    return run_checks(node(kernel_log=KernelLog(source="file", window="all", lines=lines)))


def test_xid_79_calls_for_drain_and_xid_13_is_the_application():
    xids = {r.title.split()[1]: r for r in by_id(_kernel_results(), "DR302")}
    assert set(xids) == {"13", "79"}
    assert xids["79"].status == "problem"
    assert "drain" in xids["79"].fix and "nvidia-smi -r" in xids["79"].fix
    assert xids["13"].status == "warn"
    assert "application" in xids["13"].why.lower() and "drain" not in xids["13"].fix
    assert "(and 1 more)" in xids["13"].found  # two Xid 13 lines, one result
    assert xids["79"].source and "xid" in xids["79"].source


def test_aer_oom_and_hung_task_lines():
    results = _kernel_results()
    aer = one(results, "DR303")
    assert aer.status == "problem" and "Uncorrected (Fatal)" in aer.found
    oom = one(results, "DR304")
    assert oom.status == "warn" and "pt_data_worker" in oom.title
    hung = one(results, "DR305")
    assert "python3" in hung.title
    assert by_id(results, "DR306") == []  # the lost GPU already has its Xid 79
    assert "no Xid" not in one(results, "DR301").found


def test_clean_and_unreadable_kernel_logs():
    clean = one(results_of("DR301", node()), "DR301")
    assert clean.status == "ok" and "no Xid" in clean.found
    unreadable = node(kernel_log={"readable": False})
    result = one(results_of("DR301", unreadable), "DR301")
    assert result.status == "skipped" and "dmesg_restrict" in result.fix


def _gpu_results() -> list[CheckResult]:
    readings = json.loads((FIXTURES / "nvml_readings.json").read_text())
    devices = devices_from_readings(readings, {40211: "python", 40298: "python"})
    return run_checks(node(gpus=Gpus(available=True, devices=devices)))


def test_a_healthy_gpu_reading():
    results = [r for r in _gpu_results() if r.title.startswith("GPU 0")]
    assert {r.status for r in results} == {"ok"}, results


def test_a_failing_gpu_reading():
    results = [r for r in _gpu_results() if r.title.startswith("GPU 1")]
    status = {r.id: r.status for r in results if r.id != "DR503"}
    assert status["DR501"] == "warn"  # 97% memory used before the job
    assert status["DR502"] == "problem"  # uncorrectable ECC since boot
    assert status["DR504"] == "warn"  # gen3 x8 of gen4 x16
    assert status["DR505"] == "warn"  # 412 replays
    assert status["DR506"] == "warn"  # thermal slowdown bits 0x20 | 0x40
    assert status["DR507"] == "warn"  # two processes
    retired = by_id(results, "DR503")
    assert {r.title.split(": ")[1] for r in retired} == {
        "page retirement pending",
        "row remapping pending",
    }
    pcie = one(results, "DR504")
    assert (pcie.found, pcie.wanted) == ("gen3 x8", "gen4 x16")
    assert "thermal" in one(results, "DR506").title


def test_results_come_area_by_area_and_gpu_by_gpu():
    results = _gpu_results()
    areas = [AREAS.index(r.area) for r in results]
    assert areas == sorted(areas)
    gpu = [r for r in results if r.area == "gpu"]
    assert gpu[0].id == "DR500"
    # Every result of GPU 0 comes before any of GPU 1, each GPU's in id order.
    owners = [r.title.split(":")[0] for r in gpu[1:]]
    assert owners == sorted(owners) and set(owners) == {"GPU 0", "GPU 1"}
    for name in ("GPU 0", "GPU 1"):
        ids = [r.id for r in gpu[1:] if r.title.startswith(name)]
        assert ids == sorted(ids)


def test_libraries_name_what_needs_the_newer_version():
    facts = node(
        libraries={
            "glibc": "2.17",
            "wheels_glibc_needed": "2.28",
            "wheels_glibc_needed_by": ("torch",),
            "libstdcxx_max": "3.4.19",
            "extensions_glibcxx_needed": "3.4.30",
            "extensions_glibcxx_needed_by": ("flash_attn_2_cuda.so",),
        }
    )
    results = run_checks(facts)
    assert one(results, "DR401").wanted == ">= 2.28 (torch)"
    assert one(results, "DR402").wanted == ">= GLIBCXX_3.4.30 (flash_attn_2_cuda.so)"


def test_selftest_results_in_the_order_they_ran():
    tests = (
        SelftestResult(name="cpu_step", status="passed", duration_s=3.2, timeout_s=60),
        SelftestResult(
            name="gloo_allreduce",
            status="hung",
            duration_s=60,
            timeout_s=60,
            where=("pid 7: /x/train.py:12 in step",),
        ),
        SelftestResult(name="gpu_step:0", status="passed", duration_s=2, timeout_s=60),
        SelftestResult(
            name="gpu_step:1",
            status="failed",
            duration_s=2,
            timeout_s=60,
            message="RuntimeError: CUDA error: unknown error",
        ),
    )
    results = [r for r in run_checks(node(selftests=tests)) if r.area == "selftest"]
    assert [(r.id, r.status) for r in results] == [
        ("DR701", "ok"),
        ("DR702", "problem"),
        ("DR703", "ok"),
        ("DR703", "problem"),
    ]
    assert "/x/train.py:12" in results[1].found
    assert results[3].title == "Training step on one GPU (1) failed"
    assert "-i 1" in results[3].fix and "<index>" not in results[3].fix


def test_no_selftest_results_without_selftest():
    assert [r for r in run_checks(node()) if r.area == "selftest"] == []

"""The checks are pure functions of facts: each is tested with facts built here or recorded
elsewhere (tests/doctor/fixtures), healthy and not."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from hangdoctor.doctor.checks import (
    distributed,
    gpu,
    kernel_log,
    libraries,
    os_limits,
    run_checks,
    selftest,
    versions,
)
from hangdoctor.doctor.facts import (
    Distributed,
    GpuDevice,
    Gpus,
    KernelLog,
    Libraries,
    Limits,
    SelftestResult,
    Versions,
)
from hangdoctor.doctor.probe_gpu import devices_from_readings
from hangdoctor.doctor.result import exit_code
from tests.doctor.factories import GIB, by_id, make_facts, one

FIXTURES = Path(__file__).parent / "fixtures"
MIB = 1024**2


def limits(**changes) -> Limits:
    return make_facts().limits.model_copy(update=changes)


def test_a_healthy_node_is_all_well():
    results = run_checks(make_facts())
    assert exit_code(results) == 0, [r for r in results if r.status in ("warn", "problem")]


@pytest.mark.parametrize(("shm_mib", "workers", "status"), [
    (64, 8, "problem"),        # Docker's default with 8 workers
    (1024, 8, "warn"),         # holds a modest batch per worker, not two large ones
    (4096, 8, "ok"),
    (64, 0, "problem"),        # under the floor even without workers
])
def test_dev_shm_against_dataloader_workers(shm_mib, workers, status):
    facts = make_facts(limits=limits(shm_total_bytes=shm_mib * MIB,
                                     shm_free_bytes=shm_mib * MIB),
                       dataloader_workers=workers)
    result = one(os_limits.check(facts), "DR205")
    assert result.status == status
    if status != "ok":
        assert "--shm-size" in result.fix and "--ipc=host" in result.fix
        assert f"{shm_mib}" in result.found or "GiB" in result.found


def test_full_dev_shm_counts_free_space():
    facts = make_facts(limits=limits(shm_total_bytes=32 * GIB, shm_free_bytes=10 * MIB))
    assert one(os_limits.check(facts), "DR205").status == "problem"


@pytest.mark.parametrize(("soft", "status"), [(1024, "warn"), (4096, "ok"), (-1, "ok")])
def test_open_files(soft, status):
    result = one(os_limits.check(make_facts(limits=limits(nofile_soft=soft, nofile_hard=4096))),
                 "DR203")
    assert result.status == status
    if status == "warn":
        assert result.fix.startswith("ulimit -n 4096")


@pytest.mark.parametrize(("value", "status"), [(65530, "info"), (262144, "ok"), (30000, "warn")])
def test_max_map_count(value, status):
    # The kernel default (65530) is enough for most jobs: it is reported, not warned about.
    result = one(os_limits.check(make_facts(limits=limits(max_map_count=value))), "DR201")
    assert result.status == status
    assert result.found.startswith(str(value))


def test_somaxconn_below_world_size_is_a_problem():
    facts = make_facts(limits=limits(somaxconn=128, world_size=512))
    assert one(os_limits.check(facts), "DR202").status == "problem"
    facts = make_facts(limits=limits(somaxconn=128))
    assert one(os_limits.check(facts), "DR202").status == "warn"


def test_locked_memory_matters_only_with_rdma():
    small = limits(memlock_soft=8 * MIB)
    assert one(os_limits.check(make_facts(limits=small)), "DR204").status == "info"
    with_ib = small.model_copy(update={"rdma_devices": ("mlx5_0",)})
    result = one(os_limits.check(make_facts(limits=with_ib)), "DR204")
    assert result.status == "warn" and "mlx5_0" in result.why


def test_swapping_heavily_warns():
    facts = make_facts(limits=limits(swap_total_bytes=16 * GIB, swap_used_bytes=8 * GIB))
    assert one(os_limits.check(facts), "DR206").status == "warn"


@pytest.mark.parametrize(("changes", "status"), [
    ({"ptrace_scope": 3}, "problem"),
    ({"cap_sys_ptrace": False}, "warn"),          # root in a container without SYS_PTRACE
    ({"py_spy": None}, "warn"),
    ({"ptrace_scope": 1, "cap_sys_ptrace": False, "is_root": False}, "info"),
])
def test_ptrace(changes, status):
    assert one(os_limits.check(make_facts(limits=limits(**changes))), "DR207").status == status


def test_cuda_runtime_newer_than_driver_minimum():
    facts = make_facts(versions=Versions(python="3.11", torch="2.4.0", torch_cuda="12.4",
                                         driver="535.161.08"))
    result = one(versions.check(facts), "DR102")
    # 535 runs CUDA 12.4 only through minor-version compatibility: a warning, with the table.
    assert result.status == "warn"
    assert result.wanted.startswith(">= 550.54.14")
    assert result.source and "cuda-toolkit-release-notes" in result.source


def test_driver_below_the_major_floor_is_a_problem():
    facts = make_facts(versions=Versions(python="3.11", torch="2.4.0", torch_cuda="12.4",
                                         driver="470.82.01"))
    result = one(versions.check(facts), "DR102")
    assert result.status == "problem" and result.source


def test_driver_new_enough():
    facts = make_facts(versions=Versions(python="3.11", torch="2.4.0", torch_cuda="12.4",
                                         driver="550.54.15"))
    assert one(versions.check(facts), "DR102").status == "ok"


def test_nvcc_major_mismatch_breaks_extension_builds():
    facts = make_facts(versions=Versions(python="3.11", torch="2.4.0", torch_cuda="12.1",
                                         nvcc="13.0"))
    result = one(versions.check(facts), "DR103")
    assert result.status == "problem" and "cpp_extension" in (result.source or "")


def test_known_bad_combination_from_the_data_file():
    facts = make_facts(versions=Versions(python="3.8", torch="1.5.0", torch_cuda="10.2",
                                         nvcc="10.2"))
    result = one(versions.check(facts), "DR104")
    assert result.source == "https://github.com/pytorch/pytorch/issues/33203"
    facts = make_facts(versions=Versions(python="3.8", torch="1.5.0", torch_cuda="10.1",
                                         nvcc="10.1"))
    assert by_id(versions.check(facts), "DR104") == []


def test_stale_extension_lock():
    lock = "/root/.cache/torch_extensions/py311_cu121/fused_adam/lock"
    facts = make_facts(versions=Versions(python="3.11", torch_extension_locks=(lock,)))
    result = one(versions.check(facts), "DR105")
    assert result.status == "warn" and result.fix == f"If no build is running: `rm {lock}`"


def _kernel_results() -> list:
    lines = tuple((FIXTURES / "dmesg_gpu_node.txt").read_text().splitlines())
    return kernel_log.check(make_facts(kernel_log=KernelLog(source="file", window="all",
                                                            lines=lines)))


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


def test_only_corrected_aer_is_a_warning():
    line = ("2026-11-29T05:02:44,501022+00:00 nvidia 0000:3b:00.0: PCIe Bus Error: "
            "severity=Corrected, type=Physical Layer, (Receiver ID)")
    facts = make_facts(kernel_log=KernelLog(source="dmesg", window="24h", lines=(line,)))
    assert one(kernel_log.check(facts), "DR303").status == "warn"


def test_clean_and_unreadable_kernel_logs():
    clean = one(kernel_log.check(make_facts()), "DR301")
    assert clean.status == "ok" and "no Xid" in clean.found
    unreadable = make_facts(kernel_log=KernelLog(source="dmesg", window="24h", readable=False))
    result = one(kernel_log.check(unreadable), "DR301")
    assert result.status == "skipped" and "dmesg_restrict" in result.fix


def _gpu_results() -> list:
    readings = json.loads((FIXTURES / "nvml_readings.json").read_text())
    devices = devices_from_readings(readings, {40211: "python", 40298: "python"})
    return gpu.check(make_facts(gpus=Gpus(available=True, devices=devices)))


def test_a_healthy_gpu_reading():
    results = [r for r in _gpu_results() if r.title.startswith("GPU 0")]
    assert {r.status for r in results} == {"ok"}, results


def test_a_failing_gpu_reading():
    results = [r for r in _gpu_results() if r.title.startswith("GPU 1")]
    status = {r.id: r.status for r in results if r.id != "DR503"}
    assert status["DR501"] == "warn"        # 97% memory used before the job
    assert status["DR502"] == "problem"     # uncorrectable ECC since boot
    assert status["DR504"] == "warn"        # gen3 x8 of gen4 x16
    assert status["DR505"] == "warn"        # 412 replays
    assert status["DR506"] == "warn"        # thermal slowdown bits 0x20 | 0x40
    assert status["DR507"] == "warn"        # two processes
    retired = by_id(results, "DR503")
    assert {r.title.split(": ")[1] for r in retired} == {"page retirement pending",
                                                         "row remapping pending"}
    pcie = one(results, "DR504")
    assert (pcie.found, pcie.wanted) == ("gen3 x8", "gen4 x16")
    assert "thermal" in one(results, "DR506").title


def test_idle_link_below_max_generation_is_only_info():
    device = GpuDevice(index=0, pcie_gen=1, pcie_gen_max=4, pcie_width=16, pcie_width_max=16,
                       utilization_gpu_percent=0)
    result = one(gpu.check(make_facts(gpus=Gpus(available=True, devices=(device,)))), "DR504")
    assert result.status == "info"


def test_no_gpu_is_a_fact_not_an_error():
    result = one(gpu.check(make_facts()), "DR500")
    assert result.status == "info"


def test_distributed_environment():
    d = Distributed(environment={"TORCH_NCCL_ASYNC_ERROR_HANDLING": "0",
                                 "NCCL_SOCKET_IFNAME": "ib", "TORCH_DISTRIBUTED_DEBUG": "DETAIL"},
                    interfaces=("eth0", "lo"), master_addr="no-such-host.invalid",
                    master_addr_resolves_to=(), master_addr_error="Name or service not known",
                    master_port="29500", master_port_free=False)
    results = distributed.check(make_facts(distributed=d))
    assert one(results, "DR601").status == "warn"
    assert one(results, "DR603").status == "problem"
    assert one(results, "DR604").status == "warn"
    assert one(results, "DR605").status == "warn"
    assert one(results, "DR607").status == "problem"
    ok = Distributed(environment={"NCCL_SOCKET_IFNAME": "^docker,lo",
                                  "TORCH_NCCL_ASYNC_ERROR_HANDLING": "1"},
                     interfaces=("eth0", "lo", "docker0"))
    results = distributed.check(make_facts(distributed=ok))
    assert by_id(results, "DR607") == [] and one(results, "DR601").status == "ok"


def test_glibc_and_libstdcxx_against_what_code_needs():
    lib = Libraries(glibc="2.17", wheels_glibc_needed="2.28", wheels_glibc_needed_by=("torch",),
                    libstdcxx_max="3.4.19", extensions_glibcxx_needed="3.4.30",
                    extensions_glibcxx_needed_by=("flash_attn_2_cuda.so",),
                    driver_module="550.54.15", driver_userspace="535.161.08")
    results = libraries.check(make_facts(libraries=lib))
    assert one(results, "DR401").status == "problem"
    assert "flash_attn" in one(results, "DR402").wanted
    assert one(results, "DR402").status == "problem"
    assert one(results, "DR404").status == "problem"


def test_selftest_results():
    tests = (SelftestResult(name="cpu_step", status="passed", duration_s=3.2, timeout_s=60),
             SelftestResult(name="gloo_allreduce", status="hung", duration_s=60, timeout_s=60,
                            where=("pid 7: /x/train.py:12 in step",)),
             SelftestResult(name="gpu_step:1", status="failed", duration_s=2, timeout_s=60,
                            message="RuntimeError: CUDA error: unknown error"))
    results = selftest.check(make_facts(selftests=tests))
    assert [r.status for r in results] == ["ok", "problem", "problem"]
    assert "/x/train.py:12" in results[1].found
    assert "-i 1" in results[2].fix

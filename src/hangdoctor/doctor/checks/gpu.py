"""GPUs through NVML: memory and utilisation, ECC, retired pages and remapped rows, PCIe link
against its maximum, replay counter, clock-event reasons, processes sharing a GPU.

No GPU is a fact, not an error.
"""

from __future__ import annotations

from hangdoctor.doctor.facts import Facts, GpuDevice
from hangdoctor.doctor.result import CheckResult
from hangdoctor.doctor.units import size

NVML_SOURCE = "https://docs.nvidia.com/deploy/nvml-api/group__nvmlClocksEventReasons.html"
RETIREMENT_SOURCE = "https://docs.nvidia.com/deploy/dynamic-page-retirement/index.html"
REMAPPING_SOURCE = "https://docs.nvidia.com/deploy/a100-gpu-mem-error-mgmt/index.html"

#: nvmlClocksEventReason* bits that mean the GPU is slowed by heat or power delivery (the
#: software power cap, 0x4, is normal under load and not listed).
CLOCK_EVENTS = {
    0x8: "hardware slowdown",
    0x20: "software thermal slowdown",
    0x40: "hardware thermal slowdown",
    0x80: "hardware power brake",
}
MEMORY_BUSY = 0.9
REPLAY_WARN = 100


def _r(id: str, status: str, title: str, **fields: str | None) -> CheckResult:
    return CheckResult(id=id, area="gpu", status=status, title=title,  # type: ignore[arg-type]
                       **{k: v for k, v in fields.items() if v is not None})


def _memory(d: GpuDevice, name: str) -> CheckResult | None:
    if d.memory_total_bytes is None or d.memory_used_bytes is None:
        return None
    share = d.memory_used_bytes / d.memory_total_bytes if d.memory_total_bytes else 0.0
    util = f", utilisation {d.utilization_gpu_percent}%" if d.utilization_gpu_percent is not None \
        else ""
    found = f"{size(d.memory_used_bytes)} of {size(d.memory_total_bytes)} used{util}"
    if share >= MEMORY_BUSY:
        return _r("DR501", "warn", f"{name}: memory already {share:.0%} used", found=found,
                  wanted="free before the job starts",
                  why="A job started on a GPU that another process fills stalls in allocator "
                      "retries or fails with CUDA out of memory on one rank while the others "
                      "wait.",
                  fix=f"nvidia-smi -i {d.index}   (find the process; end it or pick another GPU "
                      "with CUDA_VISIBLE_DEVICES)")
    return _r("DR501", "ok", f"{name}: memory and utilisation", found=found)


def _ecc(d: GpuDevice, name: str) -> list[CheckResult]:
    out = []
    if d.ecc_uncorrected_volatile:
        out.append(_r("DR502", "problem", f"{name}: uncorrectable ECC errors since boot",
                      found=str(d.ecc_uncorrected_volatile), wanted="0",
                      why="Uncorrectable memory errors corrupt or kill the process using the "
                          "memory (Xid 48/94/95); its peers hang in their next collective.",
                      fix=f"sudo nvidia-smi -r -i {d.index}   (reset when idle); drain the node "
                          "if they recur", source=RETIREMENT_SOURCE))
    elif d.ecc_uncorrected_aggregate:
        out.append(_r("DR502", "warn", f"{name}: uncorrectable ECC errors in its lifetime",
                      found=str(d.ecc_uncorrected_aggregate), wanted="0",
                      why="Past uncorrectable errors mark a GPU whose memory is failing.",
                      fix=f"nvidia-smi -q -d ECC,PAGE_RETIREMENT,ROW_REMAPPER -i {d.index}",
                      source=RETIREMENT_SOURCE))
    if d.retired_pages_pending:
        out.append(_r("DR503", "problem", f"{name}: page retirement pending",
                      found=f"pending (retired so far: {d.retired_pages_count or 0})",
                      wanted="no pending retirement",
                      why="A bad memory page is retired only at the next GPU reset; until then "
                          "jobs can hit it again (Xid 48/63).",
                      fix=f"sudo nvidia-smi -r -i {d.index}   (when no job uses it)",
                      source=RETIREMENT_SOURCE))
    if d.remapped_rows_failure:
        out.append(_r("DR503", "problem", f"{name}: row remapping failed",
                      found="remapping failure", wanted="no failure",
                      why="The GPU has run out of spare memory rows (Xid 64): it needs "
                          "replacing.",
                      fix="Drain the node and have the GPU replaced (RMA)",
                      source=REMAPPING_SOURCE))
    elif d.remapped_rows_pending:
        out.append(_r("DR503", "warn", f"{name}: row remapping pending",
                      found="pending", wanted="no pending remapping",
                      why="A faulty memory row is remapped only at the next GPU reset; until "
                          "then jobs can hit it (Xid 63/94/95).",
                      fix=f"sudo nvidia-smi -r -i {d.index}   (when no job uses it)",
                      source=REMAPPING_SOURCE))
    return out


def _pcie(d: GpuDevice, name: str) -> list[CheckResult]:
    out = []
    if None not in (d.pcie_gen, d.pcie_gen_max, d.pcie_width, d.pcie_width_max):
        found = f"gen{d.pcie_gen} x{d.pcie_width}"
        wanted = f"gen{d.pcie_gen_max} x{d.pcie_width_max}"
        fix = (f"sudo lspci -vv -s {d.pci_bus_id or '<bus id>'} | grep -E 'LnkCap|LnkSta'; "
               "reseat the GPU or riser, check the slot and BIOS PCIe settings")
        assert d.pcie_width is not None and d.pcie_width_max is not None
        assert d.pcie_gen is not None and d.pcie_gen_max is not None
        if d.pcie_width < d.pcie_width_max:
            out.append(_r("DR504", "warn", f"{name}: PCIe link narrower than it can be",
                          found=found, wanted=wanted,
                          why="A link trained at reduced width (a bad seat, riser or slot) "
                              "cuts host transfers and collectives through the host; that rank "
                              "becomes the straggler its peers wait for.",
                          fix=fix))
        elif d.pcie_gen < d.pcie_gen_max:
            busy = (d.utilization_gpu_percent or 0) > 0
            out.append(_r("DR504", "warn" if busy else "info",
                          f"{name}: PCIe link below its maximum generation", found=found,
                          wanted=wanted,
                          why=("Under load the link should run at its maximum generation; a "
                               "lower one slows transfers." if busy else
                               "Idle GPUs lower their link generation to save power: this is "
                               "normal at idle; rerun doctor while a job runs to be sure."),
                          fix=fix))
        else:
            out.append(_r("DR504", "ok", f"{name}: PCIe link", found=found, wanted=wanted))
    if d.pcie_replay_counter:
        out.append(_r("DR505", "warn" if d.pcie_replay_counter >= REPLAY_WARN else "info",
                      f"{name}: PCIe replays", found=str(d.pcie_replay_counter),
                      wanted=f"< {REPLAY_WARN}",
                      why="Each replay is a PCIe transfer resent after an error; many of them "
                          "point at a failing link and precede bus errors (Xid 79).",
                      fix=f"sudo lspci -vv -s {d.pci_bus_id or '<bus id>'}; reseat the card, "
                          "check the riser"))
    return out


def _clocks(d: GpuDevice, name: str) -> CheckResult | None:
    if d.clock_event_reasons is None:
        return None
    active = [text for bit, text in CLOCK_EVENTS.items() if d.clock_event_reasons & bit]
    if not active:
        return None
    temp = f", {d.temperature_c} C" if d.temperature_c is not None else ""
    return _r("DR506", "warn", f"{name}: clocks slowed ({', '.join(active)})",
              found=f"reasons 0x{d.clock_event_reasons:x}{temp}", wanted="no thermal or power "
              "slowdown",
              why="A GPU slowed by heat or power delivery makes its rank the straggler: the "
                  "others wait in every collective, and a long wait can pass a timeout.",
              fix=f"nvidia-smi -q -d PERFORMANCE,TEMPERATURE,POWER -i {d.index}; check cooling, "
                  "fans and power supply", source=NVML_SOURCE)


def _processes(d: GpuDevice, name: str) -> CheckResult | None:
    if not d.processes:
        return None
    listed = ", ".join(f"{p.pid}" + (f" {p.name}" if p.name else "") +
                       (f" ({size(p.used_memory_bytes)})" if p.used_memory_bytes else "")
                       for p in d.processes[:6])
    if len(d.processes) >= 2:
        return _r("DR507", "warn", f"{name}: {len(d.processes)} processes share this GPU",
                  found=listed, wanted="one process per GPU",
                  why="Processes that share a GPU compete for memory and compute; two ranks "
                      "mapped to one GPU (a wrong LOCAL_RANK or CUDA_VISIBLE_DEVICES) deadlock "
                      "in NCCL, which forbids two ranks on one device.",
                  fix="Give each rank its own GPU: `torch.cuda.set_device(int(os.environ"
                      "['LOCAL_RANK']))`, or end the stray process (`kill <pid>`)")
    return _r("DR507", "info", f"{name}: in use by a process", found=listed,
              why="Another job already runs on this GPU.")


def check(facts: Facts) -> list[CheckResult]:
    """GPU checks."""
    gpus = facts.gpus
    if not gpus.available:
        driver = facts.versions.driver or facts.libraries.driver_module
        failure = gpus.failure
        if driver and failure is not None:
            return [_r("DR500", "warn", "GPUs could not be read through NVML",
                       found=failure.message, wanted="NVML readings",
                       why="Without NVML, ECC, PCIe and clock problems of the GPUs go unseen.",
                       fix=failure.help or "pip install 'hangdoctor[gpu]'   (nvidia-ml-py)")]
        return [_r("DR500", "info", "No NVIDIA GPU",
                   found=failure.message if failure else "no NVIDIA GPU or driver",
                   why="CPU-only node: GPU checks do not apply.")]
    results = [_r("DR500", "ok", "GPUs", found=", ".join(
        f"{d.index}: {d.name or '?'}" for d in gpus.devices) or "none")]
    for d in gpus.devices:
        name = f"GPU {d.index}"
        results += [r for r in (_memory(d, name),) if r is not None]
        results += _ecc(d, name)
        results += _pcie(d, name)
        results += [r for r in (_clocks(d, name), _processes(d, name)) if r is not None]
    return results

"""Probe GPUs through NVML (nvidia-ml-py). The live probe records each NVML call's answer in a
plain dict (`readings`), in the shape nvidia-ml-py returns; `devices_from_readings` turns those
into facts. Recorded readings from a GPU node therefore go through the same code as live ones.
"""

from __future__ import annotations

import importlib
import importlib.util
from typing import Any

import psutil

from hangdoctor import bounded
from hangdoctor.doctor.facts import GpuDevice, GpuProcess, Gpus
from hangdoctor.evidence.model import ProbeError
from hangdoctor.i18n import _

NVML_TIMEOUT_S = 8.0
NVML_HELP = "pip install 'hangdoctor[gpu]'   (installs nvidia-ml-py)"


def _text(value: Any) -> str | None:
    if value is None:
        return None
    return value.decode(errors="replace") if isinstance(value, bytes) else str(value)


def _attrs(value: Any, *names: str) -> dict[str, Any] | None:
    if value is None:
        return None
    return {n: getattr(value, n, None) for n in names}


def _pynvml() -> Any:
    """nvidia-ml-py's module. It has no type annotations, and needs none here: every answer is
    recorded as plain data and checked where `devices_from_readings` reads it."""
    return importlib.import_module("pynvml")


def read_nvml() -> dict[str, Any]:
    """Every NVML reading the checks use, as plain data; a call NVML refuses is left out."""
    pynvml = _pynvml()
    pynvml.nvmlInit()
    try:

        def get(call: str, *args: Any) -> Any:
            fn = getattr(pynvml, call, None)
            if fn is None:
                return None
            try:
                return fn(*args)
            except Exception:  # NVML_ERROR_NOT_SUPPORTED and friends: not a failure
                return None

        readings: dict[str, Any] = {
            "nvmlSystemGetDriverVersion": _text(get("nvmlSystemGetDriverVersion")),
            "nvmlSystemGetCudaDriverVersion_v2": get("nvmlSystemGetCudaDriverVersion_v2"),
            "devices": [],
        }
        for index in range(pynvml.nvmlDeviceGetCount()):
            h = pynvml.nvmlDeviceGetHandleByIndex(index)
            unc, cor = (
                pynvml.NVML_MEMORY_ERROR_TYPE_UNCORRECTED,
                pynvml.NVML_MEMORY_ERROR_TYPE_CORRECTED,
            )
            reasons = get("nvmlDeviceGetCurrentClocksEventReasons", h)
            if reasons is None:
                reasons = get("nvmlDeviceGetCurrentClocksThrottleReasons", h)
            remapped = get("nvmlDeviceGetRemappedRows", h)
            retired = [
                get("nvmlDeviceGetRetiredPages", h, cause)
                for cause in (
                    pynvml.NVML_PAGE_RETIREMENT_CAUSE_MULTIPLE_SINGLE_BIT_ECC_ERRORS,
                    pynvml.NVML_PAGE_RETIREMENT_CAUSE_DOUBLE_BIT_ECC_ERROR,
                )
            ]
            processes = get("nvmlDeviceGetComputeRunningProcesses", h) or []
            readings["devices"].append(
                {
                    "index": index,
                    "nvmlDeviceGetName": _text(get("nvmlDeviceGetName", h)),
                    "nvmlDeviceGetUUID": _text(get("nvmlDeviceGetUUID", h)),
                    "nvmlDeviceGetPciInfo": {
                        "busId": _text(getattr(get("nvmlDeviceGetPciInfo", h), "busId", None))
                    },
                    "nvmlDeviceGetMemoryInfo": _attrs(
                        get("nvmlDeviceGetMemoryInfo", h), "total", "free", "used"
                    ),
                    "nvmlDeviceGetUtilizationRates": _attrs(
                        get("nvmlDeviceGetUtilizationRates", h), "gpu", "memory"
                    ),
                    "nvmlDeviceGetTotalEccErrors": {
                        "uncorrected_volatile": get(
                            "nvmlDeviceGetTotalEccErrors", h, unc, pynvml.NVML_VOLATILE_ECC
                        ),
                        "uncorrected_aggregate": get(
                            "nvmlDeviceGetTotalEccErrors", h, unc, pynvml.NVML_AGGREGATE_ECC
                        ),
                        "corrected_volatile": get(
                            "nvmlDeviceGetTotalEccErrors", h, cor, pynvml.NVML_VOLATILE_ECC
                        ),
                    },
                    "nvmlDeviceGetRetiredPagesPendingStatus": get(
                        "nvmlDeviceGetRetiredPagesPendingStatus", h
                    ),
                    "nvmlDeviceGetRetiredPages": None
                    if all(r is None for r in retired)
                    else [len(r or ()) for r in retired],
                    "nvmlDeviceGetRemappedRows": list(remapped) if remapped is not None else None,
                    "nvmlDeviceGetCurrPcieLinkGeneration": get(
                        "nvmlDeviceGetCurrPcieLinkGeneration", h
                    ),
                    "nvmlDeviceGetMaxPcieLinkGeneration": get(
                        "nvmlDeviceGetMaxPcieLinkGeneration", h
                    ),
                    "nvmlDeviceGetCurrPcieLinkWidth": get("nvmlDeviceGetCurrPcieLinkWidth", h),
                    "nvmlDeviceGetMaxPcieLinkWidth": get("nvmlDeviceGetMaxPcieLinkWidth", h),
                    "nvmlDeviceGetPcieReplayCounter": get("nvmlDeviceGetPcieReplayCounter", h),
                    "nvmlDeviceGetCurrentClocksEventReasons": reasons,
                    "nvmlDeviceGetTemperature": get(
                        "nvmlDeviceGetTemperature", h, pynvml.NVML_TEMPERATURE_GPU
                    ),
                    "nvmlDeviceGetComputeRunningProcesses": [
                        {"pid": p.pid, "usedGpuMemory": p.usedGpuMemory} for p in processes
                    ],
                }
            )
        return readings
    finally:
        pynvml.nvmlShutdown()


def cuda_version(value: int | None) -> str | None:
    """NVML's 12040 as `12.4`."""
    return f"{value // 1000}.{value % 1000 // 10}" if isinstance(value, int) and value else None


def devices_from_readings(
    readings: dict[str, Any], process_names: dict[int, str] | None = None
) -> tuple[GpuDevice, ...]:
    """Facts from NVML readings (live or recorded)."""
    names = process_names or {}
    devices: list[GpuDevice] = []
    for raw in readings.get("devices", []):
        memory = raw.get("nvmlDeviceGetMemoryInfo") or {}
        util = raw.get("nvmlDeviceGetUtilizationRates") or {}
        ecc = raw.get("nvmlDeviceGetTotalEccErrors") or {}
        retired = raw.get("nvmlDeviceGetRetiredPages")
        remapped = raw.get("nvmlDeviceGetRemappedRows")
        pending = raw.get("nvmlDeviceGetRetiredPagesPendingStatus")
        used = memory.get("used")
        # NVML reports processes without a memory figure (no permission) as a huge sentinel.
        devices.append(
            GpuDevice(
                index=int(raw.get("index", len(devices))),
                name=raw.get("nvmlDeviceGetName"),
                uuid=raw.get("nvmlDeviceGetUUID"),
                pci_bus_id=(raw.get("nvmlDeviceGetPciInfo") or {}).get("busId"),
                memory_used_bytes=used,
                memory_total_bytes=memory.get("total"),
                utilization_gpu_percent=util.get("gpu"),
                ecc_uncorrected_volatile=ecc.get("uncorrected_volatile"),
                ecc_uncorrected_aggregate=ecc.get("uncorrected_aggregate"),
                ecc_corrected_volatile=ecc.get("corrected_volatile"),
                retired_pages_pending=bool(pending) if pending is not None else None,
                retired_pages_count=sum(retired) if retired is not None else None,
                remapped_rows_pending=bool(remapped[2]) if remapped else None,
                remapped_rows_failure=bool(remapped[3]) if remapped else None,
                pcie_gen=raw.get("nvmlDeviceGetCurrPcieLinkGeneration"),
                pcie_gen_max=raw.get("nvmlDeviceGetMaxPcieLinkGeneration"),
                pcie_width=raw.get("nvmlDeviceGetCurrPcieLinkWidth"),
                pcie_width_max=raw.get("nvmlDeviceGetMaxPcieLinkWidth"),
                pcie_replay_counter=raw.get("nvmlDeviceGetPcieReplayCounter"),
                clock_event_reasons=raw.get("nvmlDeviceGetCurrentClocksEventReasons"),
                temperature_c=raw.get("nvmlDeviceGetTemperature"),
                processes=tuple(
                    GpuProcess(
                        pid=p["pid"],
                        used_memory_bytes=p.get("usedGpuMemory")
                        if (p.get("usedGpuMemory") or 0) < 2**63
                        else None,
                        name=names.get(p["pid"]),
                    )
                    for p in raw.get("nvmlDeviceGetComputeRunningProcesses") or ()
                ),
            )
        )
    return tuple(devices)


def probe_gpus(driver_present: bool) -> tuple[Gpus, dict[str, Any] | None]:
    """GPU facts and the raw readings; no GPU (no driver) is `available=False`, no failure."""
    if importlib.util.find_spec("pynvml") is None:
        if not driver_present:
            return Gpus(), None
        return Gpus(
            failure=ProbeError(
                probe="nvml",
                kind="missing_tool",
                message=_("nvidia-ml-py is not installed"),
                help=NVML_HELP,
            )
        ), None
    readings, failure = bounded.call("nvml", read_nvml, NVML_TIMEOUT_S)
    if readings is None:
        # An NVML that does not answer is a driver in trouble, whatever the version probe saw.
        if not driver_present and (failure is None or failure.kind != "timeout"):
            return Gpus(), None
        return Gpus(failure=failure), None
    names: dict[int, str] = {}
    for raw in readings.get("devices", []):
        for p in raw.get("nvmlDeviceGetComputeRunningProcesses") or ():
            try:
                names[p["pid"]] = psutil.Process(p["pid"]).name()
            except psutil.Error:
                continue
    devices = devices_from_readings(readings, names)
    return Gpus(available=bool(devices), devices=devices), readings

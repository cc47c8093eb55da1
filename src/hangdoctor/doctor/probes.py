"""Gather every fact the checks need. Probes run side by side, each bounded in time; a probe
that fails is recorded in `Facts.failures` and the others go on."""

from __future__ import annotations

import os
import socket
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

from hangdoctor import bounded
from hangdoctor.doctor.facts import (
    Distributed,
    Facts,
    Gpus,
    KernelLog,
    Libraries,
    Limits,
    SelftestResult,
    Versions,
)
from hangdoctor.doctor.probe_gpu import cuda_version, probe_gpus
from hangdoctor.doctor.probe_host import probe_libraries, probe_limits
from hangdoctor.doctor.probe_net import probe_distributed, probe_framework_settings
from hangdoctor.doctor.probe_versions import distribution_versions, probe_versions
from hangdoctor.evidence.model import ProbeError
from hangdoctor.i18n import _
from hangdoctor.probes.kernel_log import DMESG_HELP, read_kernel_log
from hangdoctor.redact import redact_value

KERNEL_LOG_LINES = 20000


def read_kernel_log_file(path: Path) -> KernelLog:
    """A saved kernel log (`dmesg` output) instead of the live one."""
    try:
        text = path.read_text(errors="replace")
    except OSError as error:
        return KernelLog(
            source=str(path),
            window="all",
            readable=False,
            failure=ProbeError(probe="kernel log", kind="failed", message=str(error)),
        )
    lines = [redact_value(line) for line in text.splitlines()][-KERNEL_LOG_LINES:]
    return KernelLog(source=str(path), window="all", lines=tuple(lines))


def probe_kernel_log(since_s: float | None, window: str) -> KernelLog:
    """The live kernel log within the window (`since_s` seconds back; None: all of it)."""
    since = time.time() - since_s if since_s is not None else None
    lines, error = read_kernel_log(lines=KERNEL_LOG_LINES, timeout_s=5.0, since=since)
    if error is not None:
        return KernelLog(
            source="dmesg",
            window=window,
            readable=False,
            failure=ProbeError(
                probe="kernel log",
                kind=error.kind,
                message=error.message,
                help=_(DMESG_HELP) if error.kind == "permission" else None,
            ),
        )
    return KernelLog(source="dmesg", window=window, lines=tuple(lines))


def gather(
    *,
    since_s: float | None = 86400.0,
    window: str = "24h",
    kernel_log_file: Path | None = None,
    workers: int = 8,
    selftests: tuple[SelftestResult, ...] | None = None,
    environ: dict[str, str] | None = None,
) -> Facts:
    """Observe this node."""
    env = dict(os.environ if environ is None else environ)
    failures: list[ProbeError] = []

    def kernel() -> KernelLog:
        if kernel_log_file is not None:
            return read_kernel_log_file(kernel_log_file)
        return probe_kernel_log(since_s, window)

    with ThreadPoolExecutor(max_workers=6, thread_name_prefix="hangdoctor-doctor") as pool:
        f_dists = pool.submit(distribution_versions)
        f_kernel = pool.submit(kernel)
        f_limits = pool.submit(probe_limits, env)
        f_net = pool.submit(probe_distributed, env)
        dists = f_dists.result()
        f_versions = pool.submit(probe_versions, dists, env)
        versions, version_failures = f_versions.result()
        failures += version_failures
        f_libs = pool.submit(probe_libraries, env, versions.driver)
        gpus, readings = probe_gpus(driver_present=versions.driver is not None)
        kernel_log = f_kernel.result()
        limits = f_limits.result()
        libraries = f_libs.result()
        distributed = f_net.result()
    if readings:
        versions = versions.model_copy(
            update={
                "driver": versions.driver or readings.get("nvmlSystemGetDriverVersion"),
                "driver_cuda": cuda_version(readings.get("nvmlSystemGetCudaDriverVersion_v2")),
            }
        )
    if gpus.failure is not None:
        failures.append(gpus.failure)
    if kernel_log.failure is not None:
        failures.append(kernel_log.failure)
    if selftests:
        versions = _from_selftests(versions, selftests)
    hostname, _ = bounded.call("hostname", socket.gethostname, 1.0)
    return Facts(
        hostname=hostname or "unknown",
        versions=versions,
        limits=limits,
        kernel_log=kernel_log,
        libraries=libraries,
        gpus=gpus,
        distributed=distributed,
        frameworks=probe_framework_settings(env),
        selftests=selftests,
        dataloader_workers=workers,
        failures=tuple(failures),
    )


def _from_selftests(versions: Versions, selftests: tuple[SelftestResult, ...]) -> Versions:
    """cuDNN and NCCL as torch itself reports them, learnt by the CPU self-test's child."""
    details = next((t.details for t in selftests if t.name == "cpu_step"), {})
    return versions.model_copy(
        update={
            "cudnn": versions.cudnn or details.get("cudnn") or None,
            "nccl": versions.nccl or details.get("nccl") or None,
        }
    )


__all__ = ["Distributed", "Gpus", "Libraries", "Limits", "gather"]

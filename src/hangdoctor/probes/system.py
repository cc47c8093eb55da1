"""Facts about the host, recorded in every bundle."""

from __future__ import annotations

import os
import platform
import socket

import psutil

from hangdoctor.evidence.model import SystemInfo


def read_system(py_spy: str | None) -> SystemInfo:
    """Hostname, kernel, CPU and memory size, and the tools used."""
    return SystemInfo(
        hostname=socket.gethostname(),
        kernel=platform.release(),
        machine=platform.machine(),
        cpu_count=os.cpu_count(),
        memory_total_bytes=psutil.virtual_memory().total,
        python=platform.python_version(),
        py_spy=py_spy,
    )

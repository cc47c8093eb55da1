"""Probe the host: OS limits, /dev/shm, swap, ptrace permissions, C/C++ runtime libraries and
what installed code needs from them, and whether this is a container."""

from __future__ import annotations

import contextlib
import ctypes
import importlib.metadata as metadata
import os
import re
import resource
import sysconfig
import time
from pathlib import Path

import psutil

from hangdoctor.doctor.facts import UNLIMITED, Libraries, Limits
from hangdoctor.doctor.probe_versions import distribution_name
from hangdoctor.probes.pystacks import find_py_spy

CAP_SYS_PTRACE = 19
_MANYLINUX = re.compile(r"manylinux_(\d+)_(\d+)_|manylinux(2014|2010|1)_")
_LEGACY = {"2014": (2, 17), "2010": (2, 12), "1": (2, 5)}
_GLIBCXX = re.compile(rb"GLIBCXX_3\.4\.(\d+)")
_LIBCUDA = re.compile(r"libcuda\.so\.(\d+\.\d+(?:\.\d+)?)$")
LIBCUDA_DIRS = (
    "/usr/lib/x86_64-linux-gnu",
    "/usr/lib/aarch64-linux-gnu",
    "/usr/lib64",
    "/usr/lib",
    "/usr/local/nvidia/lib64",
    "/usr/local/nvidia/lib",
    "/usr/lib/wsl/lib",
)
#: Extensions larger than this are not scanned (torch's own libraries: hundreds of MB).
SCAN_MAX_FILE = 32 * 1024 * 1024
SCAN_BUDGET_S = 1.0


def _read_int(path: str) -> int | None:
    try:
        return int(Path(path).read_text().split()[0])
    except (OSError, ValueError, IndexError):
        return None


def _limit(which: int) -> tuple[int | None, int | None]:
    try:
        soft, hard = resource.getrlimit(which)
    except (OSError, ValueError):
        return None, None
    return (
        UNLIMITED if soft == resource.RLIM_INFINITY else soft,
        UNLIMITED if hard == resource.RLIM_INFINITY else hard,
    )


def _cap_sys_ptrace() -> bool | None:
    try:
        for line in Path("/proc/self/status").read_text().splitlines():
            if line.startswith("CapEff:"):
                return bool(int(line.split()[1], 16) & (1 << CAP_SYS_PTRACE))
    except (OSError, ValueError, IndexError):
        return None
    return None


def probe_limits(environ: dict[str, str]) -> Limits:
    """Limits and resources; each value None when it could not be read."""
    nofile = _limit(resource.RLIMIT_NOFILE)
    memlock = _limit(resource.RLIMIT_MEMLOCK)
    shm_total = shm_free = None
    with contextlib.suppress(OSError):
        if os.path.isdir("/dev/shm"):
            st = os.statvfs("/dev/shm")
            shm_total, shm_free = st.f_blocks * st.f_frsize, st.f_bavail * st.f_frsize
    swap_total = swap_used = memory_total = None
    with contextlib.suppress(Exception):
        swap = psutil.swap_memory()
        swap_total, swap_used = int(swap.total), int(swap.used)
    with contextlib.suppress(Exception):
        memory_total = int(psutil.virtual_memory().total)
    rdma: tuple[str, ...] = ()
    with contextlib.suppress(OSError):
        rdma = tuple(sorted(os.listdir("/sys/class/infiniband")))
    world = environ.get("WORLD_SIZE", "")
    return Limits(
        max_map_count=_read_int("/proc/sys/vm/max_map_count"),
        somaxconn=_read_int("/proc/sys/net/core/somaxconn"),
        nofile_soft=nofile[0],
        nofile_hard=nofile[1],
        memlock_soft=memlock[0],
        memlock_hard=memlock[1],
        shm_total_bytes=shm_total,
        shm_free_bytes=shm_free,
        swap_total_bytes=swap_total,
        swap_used_bytes=swap_used,
        memory_total_bytes=memory_total,
        rdma_devices=rdma,
        is_root=os.geteuid() == 0,
        cap_sys_ptrace=_cap_sys_ptrace(),
        ptrace_scope=_read_int("/proc/sys/kernel/yama/ptrace_scope"),
        py_spy=find_py_spy(),
        world_size=int(world) if world.isdigit() else None,
    )


def wheel_glibc_needs() -> dict[str, tuple[int, int]]:
    """The glibc each installed binary wheel needs, from its manylinux tags (PEP 600)."""
    needs: dict[str, tuple[int, int]] = {}
    for dist in metadata.distributions():
        try:
            wheel = dist.read_text("WHEEL") or ""
        except (OSError, UnicodeDecodeError):
            continue
        versions = []
        for line in wheel.splitlines():
            if not line.startswith("Tag:"):
                continue
            for match in _MANYLINUX.finditer(line):
                versions.append((int(match[1]), int(match[2])) if match[1] else _LEGACY[match[3]])
        if versions and (name := distribution_name(dist)):
            needs[name] = min(versions)  # any one of its tags is enough
    return needs


def _max_glibcxx(path: Path) -> int | None:
    try:
        if path.stat().st_size > SCAN_MAX_FILE:
            return None
        data = path.read_bytes()
    except OSError:
        return None
    found = [int(m) for m in _GLIBCXX.findall(data)]
    return max(found) if found else None


def extension_glibcxx_needs(budget_s: float = SCAN_BUDGET_S) -> dict[str, int]:
    """The newest GLIBCXX_3.4.N each compiled extension in site-packages refers to (libraries
    that bundle their own libstdc++ are skipped). Bounded in time: a partial scan is kept."""
    deadline = time.monotonic() + budget_s
    needs: dict[str, int] = {}
    roots = {sysconfig.get_paths()[key] for key in ("purelib", "platlib")}
    for root in roots:
        for path in Path(root).rglob("*.so*"):
            if time.monotonic() > deadline:
                return needs
            if "libstdc++" in path.name or not path.is_file():
                continue
            if (n := _max_glibcxx(path)) is not None:
                needs[str(path.relative_to(root))] = n
    return needs


def _loaded_libstdcxx() -> str | None:
    """The libstdc++ the dynamic loader picks for this process (LD_LIBRARY_PATH, conda...)."""
    try:
        ctypes.CDLL("libstdc++.so.6")
        for line in Path("/proc/self/maps").read_text().splitlines():
            if "libstdc++" in line:
                return line.split()[-1]
    except OSError:
        return None
    return None


def _container(environ: dict[str, str]) -> str | None:
    if environ.get("KUBERNETES_SERVICE_HOST"):
        return "kubernetes"
    if os.path.exists("/run/.containerenv"):
        return "podman"
    if os.path.exists("/.dockerenv"):
        return "docker"
    with contextlib.suppress(OSError):
        cgroup = Path("/proc/1/cgroup").read_text()
        for name in ("kubepods", "docker", "containerd", "lxc"):
            if name in cgroup:
                return name
    return None


def _libcuda_version() -> str | None:
    for directory in LIBCUDA_DIRS:
        with contextlib.suppress(OSError):
            for name in os.listdir(directory):
                if match := _LIBCUDA.match(name):
                    return match[1]
    return None


def probe_libraries(environ: dict[str, str], driver_module: str | None) -> Libraries:
    """glibc, libstdc++, what wheels and extensions need, container, driver halves."""
    glibc = None
    with contextlib.suppress(ValueError, OSError):
        text = os.confstr("CS_GNU_LIBC_VERSION") or ""
        glibc = text.split()[1] if text.startswith("glibc ") else None
    wheels = wheel_glibc_needs()
    wheel_need = max(wheels.values(), default=None)
    extensions = extension_glibcxx_needs()
    ext_need = max(extensions.values(), default=None)
    libstdcxx = _loaded_libstdcxx()
    have = _max_glibcxx(Path(libstdcxx)) if libstdcxx else None
    return Libraries(
        glibc=glibc,
        libstdcxx_path=libstdcxx,
        libstdcxx_max=f"3.4.{have}" if have is not None else None,
        wheels_glibc_needed=f"{wheel_need[0]}.{wheel_need[1]}" if wheel_need else None,
        wheels_glibc_needed_by=tuple(sorted(n for n, v in wheels.items() if v == wheel_need)),
        extensions_glibcxx_needed=f"3.4.{ext_need}" if ext_need is not None else None,
        extensions_glibcxx_needed_by=tuple(
            sorted(n for n, v in extensions.items() if v == ext_need)
        )[:10],
        container=_container(environ),
        driver_module=driver_module,
        driver_userspace=_libcuda_version(),
    )

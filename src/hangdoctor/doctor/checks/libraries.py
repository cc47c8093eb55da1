"""Libraries: glibc and libstdc++ against what installed wheels and extensions need, and the
NVIDIA driver's kernel module against the user-space driver a container mounted."""

from __future__ import annotations

from hangdoctor.doctor import compat
from hangdoctor.doctor.facts import Facts, Libraries
from hangdoctor.doctor.result import CheckResult

MANYLINUX_SOURCE = "https://peps.python.org/pep-0600/"
GLIBCXX_SOURCE = "https://gcc.gnu.org/onlinedocs/libstdc++/manual/abi.html"
CONTAINER_SOURCE = ("https://docs.nvidia.com/datacenter/cloud-native/container-toolkit/latest/"
                    "troubleshooting.html")


def _r(id: str, status: str, title: str, **fields: str | None) -> CheckResult:
    return CheckResult(id=id, area="libraries", status=status, title=title,  # type: ignore[arg-type]
                       **{k: v for k, v in fields.items() if v is not None})


def _glibc(lib: Libraries) -> CheckResult | None:
    have, need = compat.version(lib.glibc), compat.version(lib.wheels_glibc_needed)
    if have is None:
        return _r("DR401", "skipped", "glibc", found="not glibc, or unknown")
    if need is None:
        return _r("DR401", "ok", "glibc", found=lib.glibc)
    by = ", ".join(lib.wheels_glibc_needed_by[:4])
    if have < need:
        return _r("DR401", "problem", "glibc older than installed wheels need",
                  found=f"glibc {lib.glibc}", wanted=f">= {lib.wheels_glibc_needed} ({by})",
                  why=("A wheel built for a newer glibc fails to import with `GLIBC_x.y not "
                       "found`; in a multi-process job one rank then dies at import while the "
                       "others wait for it at rendezvous."),
                  fix=("Reinstall them for this glibc (`pip install --force-reinstall "
                       "--only-binary=:all: <package>` picks an older manylinux tag when one "
                       "exists), or use an image with a newer glibc"),
                  source=MANYLINUX_SOURCE)
    return _r("DR401", "ok", "glibc",
              found=f"{lib.glibc} (wheels need up to {lib.wheels_glibc_needed}: {by})")


def _glibcxx(lib: Libraries) -> CheckResult | None:
    need = compat.version(lib.extensions_glibcxx_needed)
    have = compat.version(lib.libstdcxx_max)
    if need is None:
        return None
    by = ", ".join(lib.extensions_glibcxx_needed_by[:4])
    if have is None:
        return _r("DR402", "warn", "libstdc++ not found",
                  found="no libstdc++.so.6 could be loaded",
                  wanted=f"GLIBCXX_{lib.extensions_glibcxx_needed} ({by})",
                  why="C++ extensions fail to import without it.",
                  fix="apt-get install libstdc++6   (or conda install -c conda-forge libstdcxx-ng)")
    if have < need:
        return _r("DR402", "problem", "libstdc++ older than installed extensions need",
                  found=f"GLIBCXX_{lib.libstdcxx_max} ({lib.libstdcxx_path})",
                  wanted=f">= GLIBCXX_{lib.extensions_glibcxx_needed} ({by})",
                  why=("An extension built with a newer GCC fails to import with "
                       "`GLIBCXX_3.4.x not found` (typical when a conda or container "
                       "libstdc++ shadows the system one); that rank dies and its peers wait."),
                  fix=("conda install -c conda-forge 'libstdcxx-ng>=12'   (or point "
                       "LD_LIBRARY_PATH at a newer libstdc++, or rebuild the extension with the "
                       "system GCC)"),
                  source=GLIBCXX_SOURCE)
    return _r("DR402", "ok", "libstdc++",
              found=f"GLIBCXX_{lib.libstdcxx_max} (extensions need up to "
                    f"{lib.extensions_glibcxx_needed}: {by})")


def _driver_split(lib: Libraries) -> CheckResult | None:
    module, user = lib.driver_module, lib.driver_userspace
    if not module or not user:
        return None
    title = "NVIDIA kernel module against user-space driver (libcuda)"
    if module != user:
        return _r("DR404", "problem", title, found=f"module {module}, libcuda {user}",
                  wanted="the same version",
                  why=("NVML and CUDA refuse to start (`Driver/library version mismatch`), "
                       "usually after a driver upgrade without reboot, or a container image "
                       "that ships its own libcuda instead of the host's."),
                  fix=("Reboot after a driver upgrade (or `sudo rmmod nvidia_uvm nvidia_drm "
                       "nvidia_modeset nvidia && sudo modprobe nvidia`); in containers, remove "
                       "libcuda from the image and let the NVIDIA container toolkit mount the "
                       "host's (`docker run --gpus all`)"),
                  source=CONTAINER_SOURCE)
    return _r("DR404", "ok", title, found=module)


def _container(lib: Libraries) -> CheckResult:
    if lib.container:
        return _r("DR403", "info", "Running in a container",
                  found=f"{lib.container}; glibc {lib.glibc or 'unknown'} is the image's",
                  why=("Inside a container the glibc, libstdc++ and CUDA libraries are the "
                       "image's; only the kernel and the NVIDIA kernel module are the host's. "
                       "Limits (/dev/shm, ulimits, capabilities) are set by the runtime."),
                  fix="Compare with the host: `ldd --version; cat /proc/driver/nvidia/version` "
                      "there")
    return _r("DR403", "info", "Not in a container (as far as can be told)", found="host")


def check(facts: Facts) -> list[CheckResult]:
    """Library checks."""
    lib = facts.libraries
    return [r for r in (_glibc(lib), _glibcxx(lib), _container(lib), _driver_split(lib))
            if r is not None]

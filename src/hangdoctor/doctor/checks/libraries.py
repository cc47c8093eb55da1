"""Libraries: glibc and libstdc++ against what installed wheels and extensions need, and the
NVIDIA driver's kernel module against the user-space driver a container mounted."""

from __future__ import annotations

from collections.abc import Iterator

from hangdoctor.doctor import compat
from hangdoctor.doctor.check import Check, Example
from hangdoctor.doctor.examples import node
from hangdoctor.doctor.facts import Facts
from hangdoctor.doctor.result import CheckResult
from hangdoctor.i18n import _

MANYLINUX_SOURCE = "https://peps.python.org/pep-0600/"
GLIBCXX_SOURCE = "https://gcc.gnu.org/onlinedocs/libstdc++/manual/abi.html"
CONTAINER_SOURCE = (
    "https://docs.nvidia.com/datacenter/cloud-native/container-toolkit/latest/troubleshooting.html"
)


class Glibc(Check):
    """glibc against the newest manylinux tag of installed wheels

    Why: A wheel built for a newer glibc (its manylinux tag) fails to import with `GLIBC_x.y not
    found`. In a multi-process job one rank then dies at import while the others wait for it at
    rendezvous.

    Instead: Reinstall the package for this glibc (`pip install --force-reinstall
    --only-binary=:all: <package>` picks an older manylinux tag when one exists), or use an image
    with a newer glibc.
    """

    id = "DR401"
    area = "libraries"
    fires_on = (
        Example(
            "glibc 2.17 under wheels for 2.28",
            lambda: node(
                libraries={
                    "glibc": "2.17",
                    "wheels_glibc_needed": "2.28",
                    "wheels_glibc_needed_by": ("torch",),
                }
            ),
            "problem",
        ),
    )
    quiet_on = (
        Example(
            "glibc 2.36 for wheels of 2.28",
            lambda: node(
                libraries={
                    "glibc": "2.36",
                    "wheels_glibc_needed": "2.28",
                    "wheels_glibc_needed_by": ("torch",),
                }
            ),
            "ok",
        ),
        Example("no binary wheel", lambda: node(), "ok"),
        Example("musl", lambda: node(libraries={"glibc": None}), "skipped"),
    )

    def check(self, facts: Facts) -> Iterator[CheckResult]:
        lib = facts.libraries
        have, need = compat.version(lib.glibc), compat.version(lib.wheels_glibc_needed)
        if have is None:
            yield self.result("skipped", "glibc", found=_("not glibc, or unknown"))
            return
        if need is None:
            yield self.result("ok", "glibc", found=str(lib.glibc))
            return
        by = ", ".join(lib.wheels_glibc_needed_by[:4])
        if have < need:
            yield self.result(
                "problem",
                _("glibc older than installed wheels need"),
                found=f"glibc {lib.glibc}",
                wanted=f">= {lib.wheels_glibc_needed} ({by})",
                why=_(
                    "A wheel built for a newer glibc fails to import with `GLIBC_x.y not "
                    "found`; in a multi-process job one rank then dies at import while the "
                    "others wait for it at rendezvous."
                ),
                fix=_(
                    "Reinstall them for this glibc (`pip install --force-reinstall "
                    "--only-binary=:all: <package>` picks an older manylinux tag when one "
                    "exists), or use an image with a newer glibc"
                ),
                source=MANYLINUX_SOURCE,
            )
            return
        yield self.result(
            "ok",
            "glibc",
            found=_(
                "{glibc} (wheels need up to {needed}: {by})",
                glibc=lib.glibc,
                needed=lib.wheels_glibc_needed,
                by=by,
            ),
        )


def _extensions_need(have: str | None) -> Facts:
    return node(
        libraries={
            "libstdcxx_max": have,
            "libstdcxx_path": "/opt/conda/lib/libstdc++.so.6",
            "extensions_glibcxx_needed": "3.4.30",
            "extensions_glibcxx_needed_by": ("flash_attn_2_cuda.so",),
        }
    )


class Libstdcxx(Check):
    """libstdc++ (the one the loader picks) against the newest `GLIBCXX_` compiled extensions refer to

    Why: A C++ extension built with a newer GCC needs a newer libstdc++ than the one the loader
    picks (typical when a conda or container libstdc++ shadows the system one): it fails to import
    with `GLIBCXX_3.4.x not found`, that rank dies and its peers wait.

    Instead: Install a newer libstdc++ (`conda install -c conda-forge 'libstdcxx-ng>=12'`), point
    `LD_LIBRARY_PATH` at one, or rebuild the extension with the system GCC.
    """

    id = "DR402"
    area = "libraries"
    fires_on = (
        Example(
            "a conda libstdc++ older than an extension needs",
            lambda: _extensions_need("3.4.19"),
            "problem",
        ),
        Example("no libstdc++ at all", lambda: _extensions_need(None), "warn"),
    )
    quiet_on = (
        Example("new enough", lambda: _extensions_need("3.4.30"), "ok"),
        Example("no compiled extension", lambda: node(), None),
    )

    def check(self, facts: Facts) -> Iterator[CheckResult]:
        lib = facts.libraries
        need = compat.version(lib.extensions_glibcxx_needed)
        have = compat.version(lib.libstdcxx_max)
        if need is None:
            return
        by = ", ".join(lib.extensions_glibcxx_needed_by[:4])
        if have is None:
            yield self.result(
                "warn",
                _("libstdc++ not found"),
                found=_("no libstdc++.so.6 could be loaded"),
                wanted=f"GLIBCXX_{lib.extensions_glibcxx_needed} ({by})",
                why=_("C++ extensions fail to import without it."),
                fix=_(
                    "apt-get install libstdc++6   (or conda install -c conda-forge libstdcxx-ng)"
                ),
            )
        elif have < need:
            yield self.result(
                "problem",
                _("libstdc++ older than installed extensions need"),
                found=f"GLIBCXX_{lib.libstdcxx_max} ({lib.libstdcxx_path})",
                wanted=f">= GLIBCXX_{lib.extensions_glibcxx_needed} ({by})",
                why=_(
                    "An extension built with a newer GCC fails to import with "
                    "`GLIBCXX_3.4.x not found` (typical when a conda or container "
                    "libstdc++ shadows the system one); that rank dies and its peers wait."
                ),
                fix=_(
                    "conda install -c conda-forge 'libstdcxx-ng>=12'   (or point "
                    "LD_LIBRARY_PATH at a newer libstdc++, or rebuild the extension with the "
                    "system GCC)"
                ),
                source=GLIBCXX_SOURCE,
            )
        else:
            yield self.result(
                "ok",
                "libstdc++",
                found=_(
                    "GLIBCXX_{have} (extensions need up to {needed}: {by})",
                    have=lib.libstdcxx_max,
                    needed=lib.extensions_glibcxx_needed,
                    by=by,
                ),
            )


class Container(Check):
    """container detection (docker, podman, kubernetes, ...)

    Why: Inside a container the glibc, libstdc++ and CUDA libraries are the image's; only the kernel
    and the NVIDIA kernel module are the host's. Limits (`/dev/shm`, ulimits, capabilities) are set
    by the container runtime, so the same image behaves differently under different runtime options.

    Instead: Compare with the host when versions or limits look wrong (`ldd --version; cat
    /proc/driver/nvidia/version` there), and set the container's limits explicitly (`--shm-size`,
    `--ulimit`, `--gpus all`).
    """

    id = "DR403"
    area = "libraries"
    informs_only = True
    quiet_on = (
        Example("in docker", lambda: node(libraries={"container": "docker"}), "info"),
        Example("on the host", lambda: node(), "info"),
    )

    def check(self, facts: Facts) -> Iterator[CheckResult]:
        lib = facts.libraries
        if not lib.container:
            yield self.result(
                "info", _("Not in a container (as far as can be told)"), found=_("host")
            )
            return
        yield self.result(
            "info",
            _("Running in a container"),
            found=_(
                "{container}; glibc {glibc} is the image's",
                container=lib.container,
                glibc=lib.glibc or _("unknown"),
            ),
            why=_(
                "Inside a container the glibc, libstdc++ and CUDA libraries are the "
                "image's; only the kernel and the NVIDIA kernel module are the host's. "
                "Limits (/dev/shm, ulimits, capabilities) are set by the runtime."
            ),
            fix=_("Compare with the host: `ldd --version; cat /proc/driver/nvidia/version` there"),
        )


class DriverSplit(Check):
    """NVIDIA kernel module against the user-space libcuda version

    Why: The NVIDIA kernel module and the user-space driver (libcuda) must be the same version. When
    they differ (a driver upgrade without a reboot, an image that ships its own libcuda) NVML and
    CUDA refuse to start with `Driver/library version mismatch`.

    Instead: Reboot after a driver upgrade (or reload the modules: `sudo rmmod nvidia_uvm nvidia_drm
    nvidia_modeset nvidia && sudo modprobe nvidia`); in containers, remove libcuda from the image
    and let the NVIDIA container toolkit mount the host's (`docker run --gpus all`).
    """

    id = "DR404"
    area = "libraries"
    fires_on = (
        Example(
            "module 550 under a libcuda 535 shipped in the image",
            lambda: node(
                libraries={"driver_module": "550.54.15", "driver_userspace": "535.161.08"}
            ),
            "problem",
        ),
    )
    quiet_on = (
        Example(
            "the same version",
            lambda: node(libraries={"driver_module": "550.54.15", "driver_userspace": "550.54.15"}),
            "ok",
        ),
        Example("no NVIDIA driver", lambda: node(), None),
    )

    def check(self, facts: Facts) -> Iterator[CheckResult]:
        module, user = facts.libraries.driver_module, facts.libraries.driver_userspace
        if not module or not user:
            return
        title = _("NVIDIA kernel module against user-space driver (libcuda)")
        if module == user:
            yield self.result("ok", title, found=module)
            return
        yield self.result(
            "problem",
            title,
            found=_("module {module}, libcuda {libcuda}", module=module, libcuda=user),
            wanted=_("the same version"),
            why=_(
                "NVML and CUDA refuse to start (`Driver/library version mismatch`), "
                "usually after a driver upgrade without reboot, or a container image "
                "that ships its own libcuda instead of the host's."
            ),
            fix=_(
                "Reboot after a driver upgrade (or `sudo rmmod nvidia_uvm nvidia_drm "
                "nvidia_modeset nvidia && sudo modprobe nvidia`); in containers, remove "
                "libcuda from the image and let the NVIDIA container toolkit mount the "
                "host's (`docker run --gpus all`)"
            ),
            source=CONTAINER_SOURCE,
        )

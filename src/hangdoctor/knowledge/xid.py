"""NVIDIA Xid error codes: what each means and whether the application or the node is at fault.

Shared by the log rule for device faults and the doctor's kernel-log check.
"""

from __future__ import annotations

from typing import NamedTuple

from hangdoctor.i18n import N_

# What an Xid means and what to do, from NVIDIA's Xid catalogue
# (https://docs.nvidia.com/deploy/xid-errors/analyzing-xid-catalog.html) and the application
# error list of NVIDIA's k8s-device-plugin (internal/rm/health.go): 13, 31, 43, 45, 68, 109 are
# the application's fault and leave the GPU healthy; the others need the node looked at.
APPLICATION = "application"
NODE = "node"


class Xid(NamedTuple):
    """What an Xid means, whose fault it is (the application's or the node's), what to do.
    `meaning` and `action` are English, marked for translation: `_(xid.meaning)` where shown."""

    meaning: str
    owner: str
    action: str


XIDS: dict[int, Xid] = {
    13: Xid(
        N_("Graphics Engine Exception: a kernel hit an illegal instruction or out-of-range access"),
        APPLICATION,
        N_(
            "Rerun with CUDA_LAUNCH_BLOCKING=1 and under `compute-sanitizer` to find the kernel; "
            "the GPU itself is fine."
        ),
    ),
    31: Xid(
        N_("GPU memory page fault: a kernel accessed an invalid address"),
        APPLICATION,
        N_(
            "Rerun with CUDA_LAUNCH_BLOCKING=1 and under `compute-sanitizer` to find the kernel "
            "(often a custom op or an index out of range); the GPU itself is fine."
        ),
    ),
    43: Xid(
        N_("GPU stopped processing: the application's context hit a fault"),
        APPLICATION,
        N_("Restart the job; look at the Xid before it for the cause."),
    ),
    45: Xid(
        N_("Preemptive cleanup after earlier errors or a killed process"),
        APPLICATION,
        N_("Follows other errors: look at the Xid before it."),
    ),
    68: Xid(
        N_("Video decoder (NVDEC) exception"),
        APPLICATION,
        N_("Restart the job; check the decoding code."),
    ),
    109: Xid(
        N_("Context switch timeout: a kernel ran too long or hung"),
        APPLICATION,
        N_("Restart the job; look for a kernel that never ends."),
    ),
    48: Xid(
        N_("Double-bit ECC error: uncorrectable device memory error"),
        NODE,
        N_("Reset the GPU (`nvidia-smi -r`) or reboot; drain the node if it repeats."),
    ),
    63: Xid(
        N_("Row remapping pending: a memory row was marked for remapping"),
        NODE,
        N_("Reset the GPU when it is idle to apply the remapping (`nvidia-smi -r`)."),
    ),
    64: Xid(
        N_("Row remapping failed"), NODE, N_("Drain the node and have the GPU replaced (RMA).")
    ),
    74: Xid(
        N_("NVLink error"),
        NODE,
        N_(
            "Reset the GPUs or reboot the node; drain it if it repeats "
            "(`nvidia-smi nvlink -s` shows link state)."
        ),
    ),
    79: Xid(
        N_("GPU has fallen off the bus: it no longer answers on PCIe"),
        NODE,
        N_(
            "Drain the node and reboot it; if it repeats, check power, cooling, seating and "
            "PCIe/BIOS firmware."
        ),
    ),
    94: Xid(
        N_("Contained ECC error: only the application using that memory was affected"),
        NODE,
        N_("Restart the job; reset the GPU when idle to retire the page."),
    ),
    95: Xid(
        N_("Uncontained ECC error: every application on the GPU is affected"),
        NODE,
        N_("Drain the node and reset the GPU (or reboot)."),
    ),
    119: Xid(
        N_("GSP RPC timeout: the GPU's system processor stopped answering"),
        NODE,
        N_("Reset the GPU or reboot the node; update the driver if it repeats."),
    ),
}

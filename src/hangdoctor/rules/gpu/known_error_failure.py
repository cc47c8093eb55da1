"""Failures the knowledge base files under this family's categories (see
rules/_known_failure.py): named at the user's line with what the known error means."""

from __future__ import annotations

from hangdoctor.rules._known_failure import KnownErrorFailure
from hangdoctor.taxonomy import Category


class KnownDeviceFaultFailure(KnownErrorFailure):
    """the job failed of a known error of a faulting GPU

    Fires when: the job failed and its exception is a known CUDA error of a device fault (an illegal
    memory access, an unspecified launch failure): names it at your line, with what it means and the
    fix

    Why: A device fault is reported asynchronously, at a later CUDA call than the kernel that caused
    it; the known error says what it means and how to find the kernel (`CUDA_LAUNCH_BLOCKING=1`).
    """

    id = "HD497"
    category = Category.GPU_DEVICE_FAULT

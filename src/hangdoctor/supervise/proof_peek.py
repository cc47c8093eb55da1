"""One look at an idle job's stacks, for a proof that it is hung (`analysis.proof`).

A single snapshot of the tree (stacks with locals, kernel state, descriptors), joined with what
`run` knows of the job so far (its output, the deaths the in-job hooks recorded) and with what
its instrumented processes say their frames' attributes are (`capture.object_identity`), and
nothing else: the full capture follows only when the hang is declared.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

from hangdoctor.analysis.job import JobView
from hangdoctor.analysis.proof import proven_hang
from hangdoctor.capture.object_identity import identify_objects
from hangdoctor.capture.tree import CaptureOptions, capture_tree
from hangdoctor.evidence.model import JobRecord
from hangdoctor.probes.job_objects import request_objects

if TYPE_CHECKING:
    from hangdoctor.probes.gpu import GpuSampler


def prove(
    pid: int, record: JobRecord, gpus: GpuSampler | None, status_dir: Path | None = None
) -> str | None:
    """Why the job rooted at `pid` can never go on, when one look proves it; else None.
    `gpus`: the supervisor's NVML sampler, already open (a wedged driver must not hold up the
    look, which opening NVML again could); `status_dir`: the instrumentation's folder, where
    the processes are asked which objects their frames' attributes are."""
    asked = request_objects(status_dir) if status_dir is not None else None
    bundle = capture_tree(pid, CaptureOptions(samples=1), gpus=gpus)
    if status_dir is not None and asked is not None:
        bundle = identify_objects(bundle, status_dir, asked)
    return proven_hang(JobView(bundle.model_copy(update={"job": record})))

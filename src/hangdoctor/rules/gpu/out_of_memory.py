"""HD401 gpu.memory_exhausted: CUDA ran out of device memory; names the line of the user's code
that the traceback ends in."""

from __future__ import annotations

from collections.abc import Iterable

from hangdoctor.analysis.job import JobView
from hangdoctor.analysis.logs import LogKind
from hangdoctor.analysis.tracebacks import Raised, tracebacks
from hangdoctor.i18n import _
from hangdoctor.rules.base import Rule
from hangdoctor.rules.confidence import Confidence
from hangdoctor.rules.finding import Culprit, Finding, Location
from hangdoctor.rules.log_helpers import matches_of, output_lines, raised_words
from hangdoctor.taxonomy import Category


def _out_of_memory(raised: Raised) -> bool:
    """torch.OutOfMemoryError from the caching allocator, or `CUDA error: out of memory` from a
    CUDA call outside it (context creation, cuBLAS workspaces)."""
    return raised.short_type == "OutOfMemoryError" or "CUDA error: out of memory" in raised.message


class GpuMemoryExhausted(Rule):
    """GPU memory exhausted

    Fires when: `CUDA out of memory` (or `CUDA error: out of memory`) in the job's output; with the
    line of your code the traceback ends in

    Why: CUDA raises `out of memory` when an allocation does not fit in the GPU's free memory. The
    peak of a step (activations of a large batch, an optimizer's states, memory kept alive across
    steps, another process on the same GPU) decides it; in a distributed job the other ranks then
    wait for the one that failed.

    Instead: Lower the peak: a smaller batch with gradient accumulation, mixed precision
    (`torch.autocast`), activation checkpointing; keep no tensors across steps (`loss.item()`);
    reduce fragmentation with `PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True`; check `nvidia-smi`
    for other processes on the GPU.
    """

    id = "HD401"
    category = Category.GPU_MEMORY_EXHAUSTED
    reads = "capture"
    specificity = 70
    names_culprit = False

    def check(self, job: JobView) -> Iterable[Finding]:
        matches = matches_of(job, LogKind.CUDA_OOM)
        raised = next((r for r in tracebacks(output_lines(job)) if _out_of_memory(r)), None)
        if not matches and raised is None:
            return
        where = raised.location if raised is not None else None
        evidence = [_("job output: {line}", line=m.line) for m in matches[:3]]
        if raised is not None:
            evidence.insert(0, _("raised {raised}", raised=raised_words(raised)))
        yield self.finding(
            confidence=Confidence.PROVEN,
            title=_(
                "GPU memory exhausted (CUDA out of memory) at {file}:{line}",
                file=where.file.rsplit("/", 1)[-1],
                line=where.line,
            )
            if where is not None
            else _("GPU memory exhausted (CUDA out of memory)"),
            explanation=_("An allocation on the GPU failed because device memory was full."),
            culprit=Culprit(rank=raised.rank, location=Location.of(where))
            if raised is not None
            else None,
            evidence=tuple(evidence),
            fixes=(
                _(
                    "Lower the peak: smaller batch size with gradient accumulation, mixed "
                    "precision (torch.autocast), activation checkpointing."
                ),
                _(
                    "Look for memory kept alive across steps (losses.append(loss)), and check "
                    "fragmentation with PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True."
                ),
                _("Check that no other process uses the same GPU (nvidia-smi)."),
            ),
        )

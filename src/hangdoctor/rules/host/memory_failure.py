"""HD698 host.memory_exhausted: The job failed of a host memory allocation. The fallback for a
failed job whose exception names that mechanism (see rules/_failure.py)."""

from __future__ import annotations

from hangdoctor.rules._failure_rule import FailureRule
from hangdoctor.taxonomy import Category


class HostMemoryFailure(FailureRule):
    """the job failed of a host memory allocation

    Fires when: the job failed of `MemoryError` or `Cannot allocate memory` and no other rule found
    an error: names it and its line in your code

    Why: A `MemoryError` or `Cannot allocate memory` means the host could not give the process the
    memory it asked for: the machine, the container or the job's allocation is full. The line that
    asked is where to start, even when the memory was used up elsewhere.

    Instead: Use less host memory at the named line: load data lazily (memory-mapped files,
    streaming), fewer DataLoader workers, no copy of the dataset per worker; check the container's
    or scheduler's memory limit.
    """

    id = "HD698"
    category = Category.HOST_MEMORY_EXHAUSTED

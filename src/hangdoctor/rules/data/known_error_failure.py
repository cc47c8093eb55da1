"""Failures the knowledge base files under this family's categories (see
rules/_known_failure.py): named at the user's line with what the known error means."""

from __future__ import annotations

from hangdoctor.rules._known_failure import KnownErrorFailure
from hangdoctor.taxonomy import Category


class KnownWorkerDeathFailure(KnownErrorFailure):
    """the job failed of a known error that says an input worker died

    Fires when: the job failed and its exception is a known error of a DataLoader worker's death
    (killed by a signal, a bus error from a full `/dev/shm`, a worker that exited unexpectedly):
    names it at your line, with what it means and the fix

    Why: When a DataLoader worker dies, the main process only learns it from the loader's error in
    the training loop; the error's wording says how it died (a signal, shared memory), which decides
    the fix.
    """

    id = "HD297"
    category = Category.DATA_WORKER_KILLED


class KnownInputStallFailure(KnownErrorFailure):
    """the job failed of a known error that says its input stopped coming

    Fires when: the job failed and its exception is a known error of an input pipeline that stopped
    delivering (a DataLoader's timeout): names it at your line, with what it means and the fix

    Why: A loader that times out has waited for a batch that never came; the known error says which
    wait ran out, and where to look for the worker that stopped.
    """

    id = "HD298"
    category = Category.DATA_PIPELINE_STALL

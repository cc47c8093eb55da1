"""PyTorch's Flight Recorder, on request: at a hang every rank writes its ring buffer of recent
collectives (with their sequence numbers) for the supervisor, which tells from them which rank
is missing from which collective."""

from __future__ import annotations

import json
import os
import sys
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from hangdoctor.instrument.bootstrap import _hangdoctor_files as files
    from hangdoctor.instrument.bootstrap import _hangdoctor_protocol as protocol
    from hangdoctor.instrument.bootstrap import _hangdoctor_state as shared
    from hangdoctor.instrument.bootstrap import _hangdoctor_status as progress
else:
    import _hangdoctor_files as files
    import _hangdoctor_protocol as protocol
    import _hangdoctor_state as shared
    import _hangdoctor_status as progress

probe = shared.probe
_answered_request: int | None = None


def _rank() -> int | None:
    return shared.status.rank if shared.status.rank is not None else progress.env_int("RANK")


def answer_flight_recorder_request() -> None:
    """When the supervisor declares a hang it drops a request file; every rank then writes its
    Flight Recorder ring buffer (the last collectives with their sequence numbers) as
    `fr-<pid>.json`. This runs in the writer thread, which gets the GIL even while the main
    thread is blocked inside a collective (torch releases it there)."""
    global _answered_request
    if probe.directory is None:
        return
    try:
        stamp = files.request_stamp()
        dist = probe.dist
        if stamp in (None, _answered_request) or dist is None or not dist.is_initialized():
            return
        _answered_request = stamp
        dump = getattr(sys.modules["torch"]._C._distributed_c10d, "_dump_fr_trace_json", None)
        if dump is None:
            return
        trace = json.loads(dump(True, True))
        pid = os.getpid()
        files.write_atomically(protocol.flight_recorder_file(pid),
                               json.dumps({"pid": pid, "rank": _rank(), "trace": trace}))
    except Exception:
        pass

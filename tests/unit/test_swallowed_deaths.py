"""Providers that die where nothing but a log line says so: a callback whose exception the
library only logs (concurrent.futures' done callbacks, asyncio's loop callbacks), and a
library's own thread (multiprocessing.Pool's result handler, killed by an exception it cannot
unpickle). Each is a death the wait-for graph can link a waiter to."""

from __future__ import annotations

from hangdoctor.analysis.deaths import thread_deaths
from hangdoctor.analysis.job import JobView
from hangdoctor.analysis.tracebacks import tracebacks
from hangdoctor.evidence.model import Bundle, JobRecord

TRAIN = "/home/ml/train.py"
FUTURES = "/usr/lib/python3.11/concurrent/futures/_base.py"
POOL = "/usr/lib/python3.11/multiprocessing/pool.py"
CONNECTION = "/usr/lib/python3.11/multiprocessing/connection.py"

DONE_CALLBACK = [
    "exception calling callback for <Future at 0x7fc6c05df650 state=finished returned NoneType>",
    "Traceback (most recent call last):",
    f'  File "{FUTURES}", line 340, in _invoke_callbacks',
    "    callback(self)",
    f'  File "{TRAIN}", line 49, in _on_written',
    "    line = json.dumps(record)",
    "TypeError: Object of type Tensor is not JSON serializable",
]
LOOP_CALLBACK = [
    "Exception in callback Publisher.flush()",
    "handle: <Handle Publisher.flush()>",
    "Traceback (most recent call last):",
    '  File "/usr/lib/python3.11/asyncio/events.py", line 80, in _run',
    "    self._context.run(self._callback, *self._args)",
    f'  File "{TRAIN}", line 12, in flush',
    "    self.sock.send(payload)",
    "BrokenPipeError: [Errno 32] Broken pipe",
]
RESULT_HANDLER = [
    "Exception in thread Thread-3 (_handle_results):",
    "Traceback (most recent call last):",
    '  File "/usr/lib/python3.11/threading.py", line 1045, in _bootstrap_inner',
    "    self.run()",
    f'  File "{POOL}", line 579, in _handle_results',
    "    task = get()",
    f'  File "{CONNECTION}", line 251, in recv',
    "    return _ForkingPickler.loads(buf.getbuffer())",
    "TypeError: RecordError.__init__() missing 1 required positional argument: 'lineno'",
]


def _deaths(*output: str):
    record = JobRecord(started_at=0.0, output_tail=output)
    return thread_deaths(
        JobView(Bundle(tool_version="t", created_at=0.0, target_pid=1, job=record))
    )


def test_a_callback_whose_exception_a_library_only_logged_is_a_death_at_its_line():
    (raised,) = tracebacks(DONE_CALLBACK)
    assert raised.callback is not None and raised.callback.startswith("exception calling")
    (death,) = _deaths(*DONE_CALLBACK)
    assert death.raised is not None and death.raised.location is not None
    assert (death.raised.location.file, death.raised.location.line) == (TRAIN, 49)


def test_asyncio_logs_the_handle_between_its_header_and_the_traceback():
    (raised,) = tracebacks(LOOP_CALLBACK)
    assert raised.callback == "Exception in callback Publisher.flush()"


def test_a_librarys_own_thread_that_died_counts_after_those_of_the_users_code():
    user_thread = [
        "Exception in thread writer:",
        "Traceback (most recent call last):",
        '  File "/usr/lib/python3.11/threading.py", line 1045, in _bootstrap_inner',
        "    self.run()",
        f'  File "{TRAIN}", line 30, in write',
        "    raise KeyError('label')",
        "KeyError: 'label'",
    ]
    deaths = _deaths(*RESULT_HANDLER, "", *user_thread)
    assert [d.raised.thread for d in deaths if d.raised] == ["writer", "Thread-3 (_handle_results)"]


def test_an_ordinary_traceback_is_no_callbacks():
    plain = DONE_CALLBACK[1:]
    assert tracebacks(plain)[0].callback is None
    assert _deaths(*plain) == []

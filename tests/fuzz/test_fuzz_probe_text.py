"""What probes read from outside the process, fuzzed: py-spy's JSON, the Flight Recorder dumps
that ranks write, /proc text, the progress files of instrumented processes. Each parser returns
what it could read or says it could not (py-spy's: ValueError, which the probe turns into a
stated gap); none raises anything else."""

from __future__ import annotations

import contextlib
import json
import os

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from hangdoctor.probes.flight_recorder import parse_dump
from hangdoctor.probes.kernel_log import _since
from hangdoctor.probes.procfs import (
    parse_fdinfo_locked,
    parse_fdinfo_mode,
    parse_stat,
    parse_syscall,
)
from hangdoctor.probes.progress import read_statuses
from hangdoctor.probes.pystacks import parse_py_spy_json
from hangdoctor.probes.sockets import _inet, _unix
from tests.fuzz.strategies import JSON, mutated

_SETTINGS = settings(
    max_examples=1000,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture],
)

PY_SPY_DUMP = [
    {
        "pid": 4242,
        "thread_id": 140245,
        "thread_name": "MainThread",
        "os_thread_id": 4242,
        "active": True,
        "owns_gil": False,
        "frames": [
            {
                "name": "wait",
                "filename": "/usr/lib/python3.11/threading.py",
                "module": None,
                "short_filename": "threading.py",
                "line": 320,
                "locals": [{"name": "self", "addr": 1403, "arg": True, "repr": "<Condition>"}],
            }
        ],
    }
]

FLIGHT_RECORD = {
    "pid": 4242,
    "rank": 1,
    "trace": {
        "entries": [
            {
                "collective_seq_id": 7,
                "profiling_name": "gloo:all_reduce",
                "state": "started",
                "process_group": ["0", "default_pg"],
                "input_sizes": [[4]],
            }
        ]
    },
}

PROC_STAT = (
    "4242 (python3 (x) y) S 1 4242 4242 0 -1 4194560 2000 0 0 0 150 30 0 0 20 0 3 0 "
    "1000 100000000 5000 18446744073709551615 1 1 0 0 0 0 0 16781312 2 0 0 0 17 1 0 0"
)

TCP_TABLE = (
    "  sl  local_address rem_address   st tx_queue rx_queue tr tm->when retrnsmt   uid  "
    "timeout inode\n   0: 0100007F:A5A3 0100007F:1F90 01 00000000:00000000 00:00000000 "
    "00000000     0        0 4242 1 0000000000000000 20 4 30 10 -1\n"
)


@_SETTINGS
@given(document=mutated(PY_SPY_DUMP, max_mutations=6))
def test_py_spy_json_mutated(document):
    with contextlib.suppress(ValueError):
        parse_py_spy_json(json.dumps(document))


@_SETTINGS
@given(text=st.text(max_size=300) | JSON.map(json.dumps))
def test_py_spy_json_arbitrary(text):
    with contextlib.suppress(ValueError):
        parse_py_spy_json(text)


@_SETTINGS
@given(document=mutated(FLIGHT_RECORD, max_mutations=6) | JSON, raw=st.text(max_size=200))
def test_flight_recorder_dumps(document, raw):
    parse_dump(json.dumps(document))
    parse_dump(raw)


@_SETTINGS
@given(
    stat=st.text(max_size=300) | st.just(PROC_STAT).map(lambda s: s.replace("150", "x")),
    syscall=st.text(max_size=120)
    | st.lists(st.text("0123456789abcdefx-", max_size=20), max_size=9).map(" ".join),
    fdinfo=st.text(max_size=120).map(lambda t: "flags:\t" + t),
)
def test_proc_text(stat, syscall, fdinfo):
    parse_stat(stat)
    parse_stat(PROC_STAT + stat)
    parse_syscall(syscall)
    parse_fdinfo_mode(fdinfo)
    parse_fdinfo_locked(fdinfo)


def test_an_flock_held_on_an_open_file_is_read_from_its_fdinfo(tmp_path):
    """fdinfo lists the locks held on the open file; a file nobody locked lists none."""
    import fcntl

    from hangdoctor.probes.procfs import read_open_files

    with open(tmp_path / "held", "w") as held, open(tmp_path / "free", "w") as free:
        fcntl.flock(held, fcntl.LOCK_EX)
        files = {f.target: f for f in read_open_files(os.getpid())}
        assert files[str(tmp_path / "held")].locked is True
        assert files[str(free.name)].locked is False
    assert parse_fdinfo_locked(
        "pos:\t0\nflags:\t02\nlock:\t1: FLOCK  ADVISORY  WRITE 7 0:1:2 0 EOF\n"
    )
    assert not parse_fdinfo_locked("pos:\t0\nflags:\t02\n")


def test_digits_that_int_does_not_take():
    """'¹' is a digit to str.isdigit but not a number to int: found by this fuzzing."""
    assert parse_syscall("¹ 0x1") == (None, ())
    assert parse_stat(PROC_STAT.replace(" 150 ", " ¹ ")) is None


def test_proc_stat_with_parentheses_in_the_name():
    assert parse_stat(PROC_STAT) == ("S", 180 / os.sysconf("SC_CLK_TCK"))


@_SETTINGS
@given(rows=st.lists(st.text(max_size=160), max_size=5), raw=st.binary(max_size=300))
def test_proc_net_tables(tmp_path, rows, raw):
    table = tmp_path / "tcp"
    for content in ("\n".join([TCP_TABLE, *rows]).encode("utf-8", "surrogatepass"), raw):
        table.write_bytes(content)
        _inet(table, "tcp", {4242, 0, 1})
        _unix(table, {4242, 0, 1})


@_SETTINGS
@given(document=JSON, raw=st.binary(max_size=200))
def test_progress_files(tmp_path, document, raw):
    (tmp_path / "status-1.json").write_text(json.dumps(document))
    (tmp_path / "status-2.json").write_bytes(raw)
    read_statuses(tmp_path)


@_SETTINGS
@given(lines=st.lists(st.text(max_size=80), max_size=6), since=st.floats(allow_nan=True))
def test_kernel_log_lines(lines, since):
    _since(lines, since)


def test_a_syscall_line_with_a_doubled_sign_gives_no_number():
    """Found by hypothesis in a CI run: `--0` passed the old `lstrip("-").isdecimal()` test."""
    from hangdoctor.probes.procfs import parse_syscall

    assert parse_syscall("--0") == (None, ())
    assert parse_syscall("-1 0x7ffd 0x7f12") == (None, ())
    assert parse_syscall("running") == (None, ())
    assert parse_syscall("7 0x3 0x10") == (7, (3, 16))

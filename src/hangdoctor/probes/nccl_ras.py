"""NCCL's RAS service (NCCL 2.24 and later), asked at a hang through the `ncclras` client that
ships with NCCL: every NCCL process runs a RAS thread, and together they know which processes
of the whole job, on every node, stopped answering and how many collectives each rank launched.
https://docs.nvidia.com/deeplearning/nccl/user-guide/docs/troubleshooting/ras.html

The client connects to the job's RAS port on this host (localhost:28028, or NCCL_RAS_ADDR) and
can retry for ever when nothing answers, so it runs in a process group of its own that is
killed at a short deadline (a stated gap). No client, or no RAS service listening (the job does
not use NCCL, or an older one), is no evidence and no gap: nothing is said.
"""

from __future__ import annotations

import functools
import os
import re
import shutil
import time
from collections.abc import Iterable, Iterator, Mapping
from pathlib import Path

import psutil

from hangdoctor import bounded
from hangdoctor.evidence.model import Bundle, ProbeError, RasRank, RasReport
from hangdoctor.i18n import N_, _
from hangdoctor.probes.nccl_ras_output import parse

PROBE = "nccl ras"
RAS_DOCS = "https://docs.nvidia.com/deeplearning/nccl/user-guide/docs/troubleshooting/ras.html"
QUERY_TIMEOUT_S = 6.0  # the whole query, after which the client is killed
PEER_WAIT_S = 3  # `ncclras -t`: how long the local NCCL process waits for the other processes
VERSION_TIMEOUT_S = 2.0
MAPS_TIMEOUT_S = 1.0  # reading one process's /proc/PID/maps (it waits for the mm lock)
MAPS_BUDGET_S = 2.0  # reading them all
JSON_SINCE = (2, 28)  # `ncclras -f json`
_MAX_MAPS = 8  # processes whose maps are read to find libnccl
_CLIENT = "ncclras"
_NO_SERVICE = "Failed to connect to the NCCL RAS service"
_HELP = N_("run `{client}` on this node by hand to read NCCL's view of the job ({docs})")


def _help() -> str:
    return _(_HELP, client=_CLIENT, docs=RAS_DOCS)


def _nccl_in_maps(pid: int) -> set[str]:
    paths = set()
    with open(f"/proc/{pid}/maps", encoding="utf-8", errors="replace") as maps:
        for line in maps:  # address perms offset dev inode [path]
            fields = line.split(maxsplit=5)
            if len(fields) == 6 and "/libnccl" in fields[5]:
                paths.add(fields[5].strip())
    return paths


def nccl_libraries(pids: Iterable[int]) -> tuple[set[str], bool]:
    """The libnccl files mapped by these processes (the first that maps one says), and whether
    any process's map was read (False: none could be, so whether the job uses NCCL is
    unknown). A map that does not come within the time left is skipped."""
    found: set[str] = set()
    read_any = False
    deadline = time.monotonic() + MAPS_BUDGET_S
    for pid in list(pids)[:_MAX_MAPS]:
        left = deadline - time.monotonic()
        if left <= 0:
            break
        paths, _ = bounded.call(
            PROBE, functools.partial(_nccl_in_maps, pid), min(MAPS_TIMEOUT_S, left), pid=pid
        )
        if paths is not None:
            read_any = True
            found |= paths
        if found:
            break
    return found, read_any


def find_client(search_paths: Iterable[str], libraries: Iterable[str]) -> str | None:
    """`ncclras` on one of these PATH values, else next to a libnccl (its folder, ../bin)."""
    for path in search_paths:
        found = shutil.which(_CLIENT, path=path) if path.strip(os.pathsep) else None
        if found:
            return found
    for library in sorted(libraries):
        folder = Path(library).parent
        for candidate in (folder / _CLIENT, folder.parent / "bin" / _CLIENT):
            if candidate.is_file() and os.access(candidate, os.X_OK):
                return str(candidate)
    return None


def address_args(environ: Mapping[str, str]) -> list[str]:
    """`-h HOST -p PORT` from NCCL_RAS_ADDR (`host:port`, `[v6]:port`); the client's default
    otherwise (it does not read NCCL_RAS_ADDR itself)."""
    value = environ.get("NCCL_RAS_ADDR", "").strip()
    if not value:
        return []
    found = re.fullmatch(
        r"\[(?P<v6>[^\]]+)\](?::(?P<p6>\d+))?|(?P<host>[^:]*)(?::(?P<port>\d+))?", value
    )
    if not found:
        return []
    host = found["v6"] or found["host"]
    port = found["p6"] or found["port"]
    return [*(["-h", host] if host else []), *(["-p", port] if port else [])]


def client_version(client: str) -> tuple[int, int] | None:
    """(major, minor) of the client, from `ncclras --version` (printed on stderr)."""
    done, _ = bounded.run(PROBE, [client, "--version"], VERSION_TIMEOUT_S, own_group=True)
    if done is None or done.returncode != 0:
        return None
    found = re.search(r"version (\d+)\.(\d+)", done.stderr + done.stdout)
    return (int(found[1]), int(found[2])) if found else None


def query(
    client: str,
    environ: Mapping[str, str],
    timeout_s: float = QUERY_TIMEOUT_S,
    version: tuple[int, int] | None = None,
) -> tuple[RasReport | None, ProbeError | None]:
    """Run the client once: its parsed report, or why there is none. No RAS service listening
    is (None, None)."""
    argv = [client, "-t", str(PEER_WAIT_S), *address_args(environ)]
    if version is not None and version >= JSON_SINCE:
        argv += ["-f", "json"]
    done, error = bounded.run(PROBE, argv, timeout_s, own_group=True)
    if done is None:
        if error is not None and error.kind == "timeout":
            error = error.model_copy(
                update={
                    "message": _(
                        "NCCL's RAS service did not answer `{client}` within {seconds:g} s "
                        "(the client was stopped)",
                        client=_CLIENT,
                        seconds=timeout_s,
                    ),
                    "help": _help(),
                }
            )
        return None, error
    report = parse(done.stdout) if done.stdout.strip() else None
    if done.returncode == 0 or _NO_SERVICE in done.stderr:
        return report if done.returncode == 0 else None, None
    last = (done.stderr.strip().splitlines() or [_("exit status {code}", code=done.returncode)])[-1]
    return report, ProbeError(
        probe=PROBE, kind="failed", message=f"{_CLIENT}: {last}", help=_help()
    )


def _named(report: RasReport) -> Iterator[RasRank]:
    yield from report.unresponsive
    yield from report.dead
    for comm in report.communicators:
        yield from comm.missing
        for launch in comm.launches:
            yield from launch.ranks


def same_job(report: RasReport, local_hosts: set[str], pids: set[int]) -> bool | None:
    """Whether the processes RAS places on this host are this job's (another NCCL job on the
    same node may own the port); None when it places none here."""
    here = [r.pid for r in _named(report) if r.host in local_hosts and r.pid is not None]
    return any(pid in pids for pid in here) if here else None


def local_hosts() -> set[str]:
    """This host's addresses, as RAS prints a node (an IP address, no scope)."""
    hosts = {"127.0.0.1", "::1"}
    try:
        interfaces = psutil.net_if_addrs()
    except OSError:
        return hosts
    for addresses in interfaces.values():
        hosts |= {a.address.split("%", 1)[0] for a in addresses if a.address}
    return hosts


def _job_environ(bundle: Bundle, environ: Mapping[str, str]) -> dict[str, str]:
    """The job's NCCL_RAS_* settings (its processes', else hangdoctor's own) and PATH."""
    merged = dict(environ)
    for process in bundle.snapshots[0].processes if bundle.snapshots else ():
        for name in ("NCCL_RAS_ADDR", "NCCL_RAS_ENABLE"):
            if name in process.environ:
                merged[name] = process.environ[name]
    return merged


def with_nccl_ras(bundle: Bundle, environ: Mapping[str, str] | None = None) -> Bundle:
    """The bundle with NCCL's RAS report of the job (`nccl_ras`), or with the gap that kept it
    from being read; unchanged where there is nothing to ask. Never raises: a capture is not
    lost to this probe."""
    limit = MAPS_BUDGET_S + VERSION_TIMEOUT_S + QUERY_TIMEOUT_S + 2.0
    asked, failure = bounded.call(PROBE, functools.partial(_ask, bundle, environ), limit)
    if asked is None:
        return (
            bundle.model_copy(update={"errors": (*bundle.errors, failure)}) if failure else bundle
        )
    return asked


def _ask(bundle: Bundle, environ: Mapping[str, str] | None) -> Bundle:
    started = time.perf_counter()
    job_env = _job_environ(bundle, os.environ if environ is None else environ)
    if job_env.get("NCCL_RAS_ENABLE", "").strip() == "0":
        return bundle
    processes = bundle.snapshots[0].processes if bundle.snapshots else ()
    libraries, maps_read = nccl_libraries(p.pid for p in processes if p.is_python is not False)
    if maps_read and not libraries:
        return bundle  # no process of the job loaded NCCL: no RAS to ask
    paths = [job_env.get("PATH", "")] + [
        p.environ["PATH"] for p in processes if "PATH" in p.environ
    ]
    client = find_client(dict.fromkeys(paths), libraries)
    if client is None:
        return bundle
    report, error = query(client, job_env, version=client_version(client))
    update: dict[str, object] = {
        "timings_s": {**bundle.timings_s, PROBE: round(time.perf_counter() - started, 4)}
    }
    if report is not None:
        pids = {p.pid for s in bundle.snapshots for p in s.processes}
        update["nccl_ras"] = report.model_copy(
            update={"same_job": same_job(report, local_hosts(), pids)}
        )
    if error is not None:
        update["errors"] = (*bundle.errors, error)
    return bundle.model_copy(update=update)

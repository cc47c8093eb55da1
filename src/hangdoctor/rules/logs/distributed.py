"""Log rules for distributed jobs: what NCCL, gloo, the TCPStore and torchrun print when a
collective times out, a connection between ranks breaks, a rank dies, or the ranks never meet.
Unlike `hangdoctor.rules.distributed`, which compares the ranks' live stacks, these read only
the log, so they serve a failure that is already over.

HD350 distributed.collective_timeout, HD351 distributed.network, HD352 distributed.rank_exited,
HD353 distributed.rendezvous.
"""

from __future__ import annotations

import re
from collections.abc import Iterable

from hangdoctor.analysis.job import JobView
from hangdoctor.analysis.logs import (
    SIGNAL_NAMES,
    LogMatch,
    RankFailure,
    line_rank,
    scan,
    torchrun_failures,
)
from hangdoctor.rules.base import Example, Rule
from hangdoctor.rules.finding import Culprit, Finding, Severity
from hangdoctor.rules.logs.common import _MAX_EVIDENCE, _cite, _clip, _found, _logs, _output

FLIGHT_RECORDER_DOCS = "https://docs.pytorch.org/tutorials/prototype/flight_recorder_tutorial.html"


# --- helpers shared by the distributed rules -------------------------------------------------
def _ranks(ranks: Iterable[int]) -> str:
    """`rank 3`, `ranks 0-2, 5`."""
    values = sorted(set(ranks))
    if not values:
        return "no rank"
    spans: list[str] = []
    start = previous = values[0]
    for value in [*values[1:], None]:
        if value is not None and value == previous + 1:
            previous = value
            continue
        spans.append(str(start) if start == previous else f"{start}-{previous}")
        if value is not None:
            start = previous = value
    return ("rank " if len(values) == 1 else "ranks ") + ", ".join(spans)


def _seconds(ms: int | None) -> str:
    return f"{ms / 1000:g} s" if ms is not None else "its timeout"


def _exit_text(failure: RankFailure) -> str:
    if failure.signal is not None:
        return f"killed by {SIGNAL_NAMES.get(failure.signal, f'signal {failure.signal}')}"
    if failure.exitcode is not None:
        return f"exit code {failure.exitcode}"
    return "exited"


_RUN_HINT = ("Next time run the job under hangdoctor, which captures every rank's stack the "
             "moment progress stops: `hangdoctor run --hang-timeout 300 -- torchrun ...`.")


# --- HD350 distributed.collective_timeout ----------------------------------------------------
def _nccl_line(rank: int, seq: int, op: str, numel: int = 1024) -> str:
    return (f"[rank{rank}]:[E1206 18:44:13.275158817 ProcessGroupNCCL.cpp:632] [Rank {rank}] "
            f"Watchdog caught collective operation timeout: WorkNCCL(SeqNum={seq}, OpType={op}, "
            f"NumelIn={numel}, NumelOut={numel}, Timeout(ms)=600000) ran for 600051 "
            "milliseconds before timing out.")


def _numel(match: LogMatch) -> str:
    found = re.search(r"NumelIn=(-?\d+)", match.fields.get("rest", ""))
    if not found:
        return ""
    count = int(found[1])
    return f", {count:,} element{'' if count == 1 else 's'}"


def _timeout_ms(match: LogMatch) -> int | None:
    found = re.search(r"Timeout\(ms\)=(\d+)", match.fields.get("rest", ""))
    return int(found[1]) if found else None


def _collective(match: LogMatch) -> str:
    return f"SeqNum={match.fields['seq']} ({match.fields['op']}{_numel(match)})"


def _logged_ranks(lines: tuple[str, ...]) -> set[int]:
    """Ranks that wrote anything to this log (from torchrun's `[rankN]:` line prefixes)."""
    ranks: set[int] = set()
    for line in lines:
        if line[:1] == "[":
            rank = line_rank(line)
            if rank is not None:
                ranks.add(rank)
    return ranks


class CollectiveTimeoutFromLog(Rule):
    """A collective exceeded its timeout (NCCL's watchdog, or a gloo operation). When the ranks'
    watchdog lines disagree on the sequence number, the rank with the lowest one is behind; when
    some ranks logged nothing about it, they probably never entered the collective."""

    id = "HD350"
    category = "distributed.collective_timeout"
    summary = "a collective timed out (from NCCL/gloo log lines)"
    specificity = 55
    names_culprit = False
    fires_on = (
        Example("every rank timed out in the same collective", lambda: _logs(
            [_nccl_line(rank, 808, "ALLREDUCE", 9801523) for rank in range(4)])),
        Example("rank 3 is behind the others", lambda: _logs(
            [*(_nccl_line(rank, 2041, "ALLREDUCE") for rank in range(3)),
             _nccl_line(3, 2039, "BROADCAST", 1)])),
        Example("rank 2 never reported a timeout", lambda: _logs(
            ["[rank2]: step 1200 loss 2.31",
             *(_nccl_line(rank, 412, "ALLREDUCE") for rank in (0, 1, 3))])),
        Example("a gloo recv timed out", lambda: _logs([
            "[rank1]: Traceback (most recent call last):",
            "[rank1]: RuntimeError: [../third_party/gloo/gloo/transport/tcp/unbound_buffer.cc:81]"
            " Timed out waiting 1800000ms for recv operation to complete"])),
    )
    quiet_on = (
        Example("a healthy distributed run", lambda: _logs([
            "[rank0]: step 100 loss 2.1", "[rank1]: step 100 loss 2.1",
            "NCCL INFO comm 0x5581 rank 0 nranks 2 cudaDev 0 busId 1000 - Init COMPLETE"])),
    )

    def check(self, job: JobView) -> Iterable[Finding]:
        lines = _output(job)
        found = scan(lines)
        nccl = [m for m in found if m.kind == "nccl_timeout" and "rank" in m.fields]
        if nccl:
            yield self._nccl(lines, nccl, [m for m in found if m.kind == "nccl_progress"])
            return
        gloo = [m for m in found if m.kind == "gloo_timeout"]
        if gloo:
            yield self._gloo(lines, gloo)

    def _nccl(self, lines: tuple[str, ...], timeouts: list[LogMatch],
              progress: list[LogMatch]) -> Finding:
        # The oldest timed-out work of each rank, within the process group most ranks report.
        groups: dict[str | None, dict[int, LogMatch]] = {}
        for match in timeouts:
            rank = match.number("rank")
            assert rank is not None  # the pattern requires it
            group = groups.setdefault(match.fields.get("pg"), {})
            if rank not in group or match.number("seq") < group[rank].number("seq"):
                group[rank] = match
        per_rank = max(groups.values(), key=len)
        timeout_ms = _timeout_ms(timeouts[0])
        seqs = {rank: m.number("seq") for rank, m in per_rank.items()}
        low = min(seqs.values())
        behind = sorted(r for r, s in seqs.items() if s == low)
        ahead = sorted(r for r, s in seqs.items() if s != low)
        related: tuple[Culprit, ...] = ()
        culprit = None
        evidence: list[str] = []
        if ahead:
            first_ahead = per_rank[ahead[0]]
            title = (f"NCCL collective timed out: {_ranks(behind)} "
                     f"{'is' if len(behind) == 1 else 'are'} behind, in "
                     f"{_collective(per_rank[behind[0]])} while {_ranks(ahead)} wait in "
                     f"{_collective(first_ahead)}")
            explanation = (
                f"Every rank runs the same collectives in the same order, numbered by SeqNum. "
                f"{_ranks(ahead).capitalize()} already issued later collectives, so "
                f"{_ranks(behind)} fell behind: it is stuck in, or before, "
                f"{_collective(per_rank[behind[0]])}, or it called a different sequence of "
                "collectives (one the others do not call).")
            culprit = Culprit(rank=behind[0], role="rank")
            related = tuple(Culprit(rank=r, role="rank") for r in behind[1:])
            order = [*behind, *ahead]
            confidence = 0.85
        else:
            first = per_rank[behind[0]]
            completed = {m.number("rank"): m.number("completed") for m in progress
                         if m.number("rank") is not None and m.number("completed") is not None}
            absent = sorted(_logged_ranks(lines) - set(per_rank))
            order = behind
            confidence = 0.8
            if completed and len(set(completed.values())) > 1:
                lowest = min(completed.values())
                slow = sorted(r for r, c in completed.items() if c == lowest)
                title = (f"NCCL collective timed out: {_ranks(slow)} completed the fewest "
                         f"collectives (last completed work {lowest})")
                explanation = ("The ranks disagree on how far they got: the one that completed "
                               "the fewest collectives is the one to look at.")
                culprit = Culprit(rank=slow[0], role="rank")
                evidence += _cite((m for m in progress if m.number("rank") in slow), limit=2)
            elif absent:
                title = (f"NCCL collective {_collective(first)} timed out on {_ranks(behind)}; "
                         f"{_ranks(absent)} never reported it")
                explanation = (
                    f"{_ranks(behind).capitalize()} waited {_seconds(timeout_ms)} in "
                    f"{_collective(first)}. {_ranks(absent).capitalize()} logged other lines "
                    "but no timeout: most likely it never entered this collective (stuck or "
                    "slow before it, or it exited), and the others waited for it.")
                culprit = Culprit(rank=absent[0], role="rank")
                related = tuple(Culprit(rank=r, role="rank") for r in absent[1:])
                confidence = 0.7
            else:
                title = (f"NCCL collective {_collective(first)} timed out on {_ranks(behind)} "
                         f"after {_seconds(timeout_ms)}")
                explanation = (
                    "The reporting ranks all waited in the same collective, so some rank never "
                    "joined it (stuck before it, or outside this log), or the collective itself "
                    "could not finish (network, GPU). The log alone cannot tell which.")
        evidence = _cite(per_rank[r] for r in order) + evidence
        return Finding(
            id=self.id, category=self.category, severity=Severity.ERROR, confidence=confidence,
            title=title, explanation=explanation, culprit=culprit, related=related,
            evidence=tuple(evidence[:_MAX_EVIDENCE]),
            fixes=(
                "Find where each rank was: rerun with TORCH_NCCL_TRACE_BUFFER_SIZE=2000 "
                "TORCH_NCCL_DUMP_ON_TIMEOUT=1 (Flight Recorder) so every rank dumps its last "
                f"collectives on timeout, and compare them ({FLIGHT_RECORDER_DOCS}).",
                _RUN_HINT,
                "Look at the code path of the rank that is behind: a collective called only on "
                "some ranks (inside `if rank == 0:`), a data-dependent branch, an uneven number "
                "of batches per rank, or a slow step (evaluation, checkpoint saving) done by one "
                "rank only.",
                "Set NCCL_DEBUG=INFO (with NCCL_DEBUG_SUBSYS=INIT,NET) to see transport errors, "
                "and leave TORCH_NCCL_ASYNC_ERROR_HANDLING at its default (never 0) so a timeout "
                "ends the job instead of hanging it.",
                "Raise init_process_group(timeout=...) only if a legitimately slow step explains "
                "the wait.",
            ),
        )

    def _gloo(self, lines: tuple[str, ...], timeouts: list[LogMatch]) -> Finding:
        ranks = sorted({r for m in timeouts if (r := m.number("rank")) is not None})
        absent = sorted(_logged_ranks(lines) - set(ranks)) if ranks else []
        timeout_ms = timeouts[0].number("timeout_ms")
        who = _ranks(ranks) if ranks else "a rank"
        title = f"gloo collective timed out on {who} after {_seconds(timeout_ms)}"
        explanation = (f"{who[:1].upper()}{who[1:]} waited {_seconds(timeout_ms)} to receive "
                       "from a peer inside a collective; the peer never sent. gloo names only "
                       "the rank that gave up, not the one it waited for.")
        culprit = None
        if absent:
            title += f"; {_ranks(absent)} reported no timeout"
            explanation += (f" {_ranks(absent).capitalize()} logged other lines but no timeout: "
                            "it is probably the one that never reached the collective.")
            culprit = Culprit(rank=absent[0], role="rank")
        return Finding(
            id=self.id, category=self.category, severity=Severity.ERROR,
            confidence=0.7 if absent else 0.75, title=title, explanation=explanation,
            culprit=culprit, evidence=tuple(_cite(timeouts)),
            fixes=(
                _RUN_HINT,
                "Rerun with TORCH_FR_BUFFER_SIZE=2000 (Flight Recorder works with gloo) and dump "
                "it on each rank to compare the collectives' sequence numbers.",
                "Look for a collective that only some ranks call, or one rank doing slow work "
                "(evaluation, saving) while the others wait.",
            ),
        )


# --- HD351 distributed.network ---------------------------------------------------------------
_PEER = re.compile(r"\[?((?:\d{1,3}\.){3}\d{1,3}|[0-9a-fA-F:]*:[0-9a-fA-F:]+)\]?[:<](\d+)")


class TransportFailure(Rule):
    """The connection between ranks failed: gloo or NCCL socket errors, InfiniBand completion
    errors, the TCPStore losing its connection. When a rank died first, the broken connection is
    its consequence and the network is probably fine."""

    id = "HD351"
    category = "distributed.network"
    summary = "the transport between ranks failed"
    specificity = 50
    names_culprit = False
    fires_on = (
        Example("gloo connection closed by peer", lambda: _logs([
            "[rank0]: RuntimeError: [../third_party/gloo/gloo/transport/tcp/pair.cc:534] "
            "Connection closed by peer [10.0.0.12]:20331"])),
        Example("NCCL remote error after a rank was killed", lambda: _logs([
            "E0325 20:57:27.620000 2606 torch/distributed/elastic/multiprocessing/api.py:869] "
            "failed (exitcode: -9) local_rank: 1 (pid: 2630) of binary: /usr/bin/python3",
            "[rank0]: torch.distributed.DistBackendError: NCCL error in: "
            "/pytorch/torch/csrc/distributed/c10d/NCCLUtils.hpp:268, remote process exited or "
            "there was a network error, NCCL version 2.21.5",
            "[rank0]: ncclRemoteError: A call failed possibly due to a network error or a "
            "remote process exiting prematurely."])),
        Example("InfiniBand completion error", lambda: _logs([
            "node2:25146:25854 [0] ib_plugin.c:1105 NCCL WARN NET/IB : Got completion from "
            "peer 10.0.35.1<49189> with error 12, opcode 0, len 0, vendor err 129"])),
    )
    quiet_on = (
        Example("a download that was reset", lambda: _logs([
            "ConnectionResetError: [Errno 104] Connection reset by peer",
            "Retrying download of shard 3"])),
    )

    def check(self, job: JobView) -> Iterable[Finding]:
        lines = _output(job)
        errors = _found(job, "transport_error")
        if not errors:
            return
        first = errors[0]
        failures = torchrun_failures(lines)
        oom = _found(job, "oom_killed", kernel=True)
        earlier = [f for f in failures if 0 <= f.index < first.index]
        violent = [f for f in failures if f.signal not in (None, 6, 15)]
        transport = ("gloo" if "gloo/" in first.line else "the TCPStore"
                     if "DistNetworkError" in first.line else "NCCL")
        peer = _PEER.search(first.detail or first.line)
        where = f" with {peer[1]}:{peer[2]}" if peer else ""
        title = f"Connection between ranks failed ({transport}{where})"
        explanation = (f"{transport[0].upper()}{transport[1:]} lost a connection to a peer: "
                       f"{_clip(first.detail or first.line)}")
        confidence = 0.75
        evidence = _cite(errors, limit=4)
        dead = (earlier or violent)[0] if (earlier or violent) else None
        if dead is not None or oom:
            if dead is not None:
                name = (f"rank {dead.rank}" if dead.rank is not None else
                        f"local rank {dead.local_rank}" if dead.local_rank is not None
                        else "a rank")
                timing = " before the first connection error" if dead in earlier else ""
                how = (f"was {_exit_text(dead)}" if dead.signal is not None
                       else f"exited ({_exit_text(dead)})")
                explanation += (f". {name[0].upper()}{name[1:]} {how}{timing}:"
                                " a peer probably died first and its connections broke with it, "
                                "so the network is probably fine.")
                evidence.append(f"log: {_clip(dead.line)}" if dead.line else
                                f"torchrun: {name} {_exit_text(dead)}")
            else:
                explanation += (". The kernel's OOM killer ended a process: a peer probably "
                                "died first and its connections broke with it.")
                evidence += _cite(oom, "kernel log", limit=1)
            title += ": a peer probably died first"
            confidence = 0.55
        yield Finding(
            id=self.id, category=self.category, severity=Severity.ERROR, confidence=confidence,
            title=title, explanation=explanation,
            # The rank that reports a broken connection is its victim; only a peer that died
            # first is worth pointing at.
            culprit=Culprit(rank=dead.rank, pid=dead.pid, role="rank") if dead else None,
            evidence=tuple(evidence[:_MAX_EVIDENCE]),
            fixes=(
                "If a rank died first, read its own error (the first traceback or signal in the "
                "log, `dmesg` for the OOM killer): that is the root cause.",
                "Otherwise rerun with NCCL_DEBUG=INFO NCCL_DEBUG_SUBSYS=INIT,NET to see which "
                "interface and transport each rank uses, and pin the one that connects the "
                "nodes with NCCL_SOCKET_IFNAME=<iface> (GLOO_SOCKET_IFNAME for gloo).",
                "On InfiniBand, check the ports (`ibstat`, `ibv_devinfo`) and try "
                "NCCL_IB_DISABLE=1 to tell an IB fault from a software one.",
                "Check that firewalls allow all ports between the nodes (NCCL and gloo open "
                "random ports, not only MASTER_PORT).",
            ),
        )


# --- HD352 distributed.rank_exited -----------------------------------------------------------
_SUMMARY = """torch.distributed.elastic.multiprocessing.errors.ChildFailedError:
============================================================
train.py FAILED
------------------------------------------------------------
Failures:
  <NO_OTHER_FAILURES>
------------------------------------------------------------
Root Cause (first observed failure):
[0]:
  time      : 2026-03-01_10:21:07
  host      : gpu-node-17
  rank      : {rank} (local_rank: {rank})
  exitcode  : {code} (pid: 48213)
  error_file: <N/A>
  traceback : {cause}
============================================================"""

_SIGNAL_ADVICE = {
    9: ("SIGKILL is almost always the kernel's OOM killer or the job scheduler (a memory limit, "
        "a preemption, a wall-clock limit).",
        "Check `dmesg` (or `journalctl -k`) for `Out of memory: Killed process` with this pid, "
        "and the scheduler's log; lower host memory use per rank (fewer DataLoader workers, "
        "memory-mapped datasets, no full copy of the dataset per rank)."),
    6: ("SIGABRT means the process aborted itself: an uncaught C++ exception (a CUDA or NCCL "
        "error), a failed assertion, or NCCL's watchdog taking the process down.",
        "Look above the summary in the log for `terminate called after throwing`, a CUDA error "
        "or an NCCL error from this rank; rerun with TORCH_SHOW_CPP_STACKTRACES=1."),
    11: ("SIGSEGV is a crash in native code: a C/C++/CUDA extension, or libraries that do not "
         "match each other.",
         "Rerun with `python -X faulthandler` (or PYTHONFAULTHANDLER=1) to get the Python stack "
         "at the crash, and check that extensions were built for the installed torch."),
    7: ("SIGBUS in a training job nearly always means /dev/shm (shared memory) is full.",
        "Give the job more shared memory: `docker run --shm-size=16g` (Kubernetes: an emptyDir "
        "with medium: Memory at /dev/shm), or fewer DataLoader workers."),
    15: ("SIGTERM means something asked it to stop: the scheduler (preemption, time limit), a "
         "user, or torchrun after another rank failed.",
         "Check the scheduler's log for a preemption or time limit, and the log for a rank that "
         "failed before this one."),
}


class RankExitedFromLog(Rule):
    """A rank died and the job ended with it: torchrun's failure summary (or its agent's
    `failed (exitcode: ...)` line, or torch.multiprocessing.spawn's) names the first rank that
    failed and how."""

    id = "HD352"
    category = "distributed.rank_exited"
    summary = "a rank exited and the job failed with it"
    specificity = 80
    names_culprit = False
    fires_on = (
        Example("rank 4 killed by SIGKILL", lambda: _logs(_SUMMARY.format(
            rank=4, code=-9, cause="Signal 9 (SIGKILL) received by PID 48213").splitlines())),
        Example("agent line only", lambda: _logs([
            "E0325 20:57:27.620000 2606 torch/distributed/elastic/multiprocessing/api.py:869] "
            "failed (exitcode: -11) local_rank: 5 (pid: 2630) of binary: /usr/bin/python3"])),
        Example("spawned process killed", lambda: _logs([
            "torch.multiprocessing.spawn.ProcessExitedException: process 1 terminated with "
            "signal SIGKILL"])),
    )
    quiet_on = (
        Example("the watchdog aborted the rank after a collective timeout", lambda: _logs([
            _nccl_line(2, 77, "ALLREDUCE"),
            *_SUMMARY.format(rank=2, code=-6,
                             cause="Signal 6 (SIGABRT) received by PID 48213").splitlines()])),
        Example("a clean torchrun run", lambda: _logs([
            "[rank0]: epoch 3 done", "[rank1]: epoch 3 done"])),
    )

    def check(self, job: JobView) -> Iterable[Finding]:
        lines = _output(job)
        failures = torchrun_failures(lines)
        if not failures:
            return
        first = next((f for f in failures if f.root_cause), None) or min(
            failures, key=lambda f: f.index)
        timeouts = _found(job, "nccl_timeout", "gloo_timeout")
        if first.signal == 6 and timeouts:
            return  # the watchdog took it down: the collective timeout is the finding
        name = (f"rank {first.rank}" if first.rank is not None else
                f"local rank {first.local_rank}" if first.local_rank is not None else "a rank")
        where = f" on {first.host}" if first.host else ""
        pid = f" (pid {first.pid})" if first.pid else ""
        severity, confidence = Severity.ERROR, 0.9
        fixes: list[str] = []
        if first.signal is not None:
            explanation, fix = _SIGNAL_ADVICE.get(first.signal, (
                f"It was killed by signal {first.signal}.",
                "Look in the log and `dmesg` for what sent it."))
            fixes.append(fix)
            if first.signal == 15:
                severity, confidence = Severity.WARNING, 0.6
        else:
            explanation = (f"It exited with code {first.exitcode}: a Python exception in that "
                           "rank. Its traceback is in the log above the summary (lines "
                           f"prefixed `[rank{first.rank if first.rank is not None else 'N'}]:`).")
            fixes.append("Decorate your entry point with "
                         "`@torch.distributed.elastic.multiprocessing.errors.record` so "
                         "torchrun's summary carries the exception itself.")
            confidence = 0.6
            # Its own exception is not a lost connection, while its peers' are: it failed first
            # and the peers' connection errors are the consequence, not the cause.
            prefix = f"[rank{first.rank}]:" if first.rank is not None else None
            transport = _found(job, "transport_error")
            own = [m for m in transport if prefix and m.line.lstrip().startswith(prefix)]
            if prefix and transport and not own:
                confidence = 0.85
                explanation += (" The other ranks' connection errors followed from it: they "
                                "lost their peer.")
        evidence = [f"log: {_clip(first.line)}" if first.line else f"torchrun: {name} failed"]
        if first.cause and first.cause not in evidence[0]:
            evidence.append(f"torchrun: {first.cause}")
        oom = [m for m in _found(job, "oom_killed", kernel=True)
               if first.pid is not None and first.pid in m.pids]
        if oom:
            explanation += " The kernel log shows the OOM killer ended this very process."
            evidence += _cite(oom, "kernel log", limit=1)
            confidence = 0.7  # host.memory_exhausted is the better explanation
        others = [f for f in failures if f is not first and f.rank is not None]
        if others:
            evidence.append(f"torchrun also lists {_ranks(f.rank for f in others)} as failed "
                            "after it")
        fixes.append("Run the job under `hangdoctor run -- torchrun ...`, which watches every "
                     "rank and reports the first one that dies, with its signal and memory.")
        yield Finding(
            id=self.id, category=self.category, severity=severity, confidence=confidence,
            title=f"{name[0].upper()}{name[1:]}{pid}{where} failed first ({_exit_text(first)})",
            explanation=explanation,
            culprit=Culprit(rank=first.rank, pid=first.pid, role="rank"),
            evidence=tuple(evidence[:_MAX_EVIDENCE]), fixes=tuple(fixes),
        )


# --- HD353 distributed.rendezvous ------------------------------------------------------------
class RendezvousFailed(Rule):
    """The job never got all its ranks together: the store could not be reached, or not every
    worker joined before the timeout."""

    id = "HD353"
    category = "distributed.rendezvous"
    summary = "ranks could not rendezvous"
    specificity = 70
    names_culprit = False
    fires_on = (
        Example("store not reachable", lambda: _logs([
            "torch.distributed.DistNetworkError: The client socket has timed out after 600000ms "
            "while trying to connect to (10.10.12.11, 25000)."])),
        Example("not every worker joined", lambda: _logs([
            "RuntimeError: Timed out initializing process group in store based barrier on rank: "
            "0, for key: store_based_barrier_key:1 (world_size=8, worker_count=7, "
            "timeout=0:30:00)"])),
        Example("elastic rendezvous timed out", lambda: _logs([
            "    raise RendezvousTimeoutError()",
            "torch.distributed.elastic.rendezvous.api.RendezvousTimeoutError"])),
    )
    quiet_on = (
        Example("one retried connection, then training", lambda: _logs([
            "[W427 01:04:16.149509694 socket.cpp:752] [c10d] The client socket has failed to "
            "connect to [::ffff:10.0.0.1]:29500 (errno: 111 - Connection refused).",
            "[rank0]: step 1 loss 7.1"])),
    )

    def check(self, job: JobView) -> Iterable[Finding]:
        found = _found(job, "rendezvous_error", "store_connect_timeout", "store_barrier_timeout",
                       "store_clients_timeout", "store_connect_failed")
        strong = [m for m in found if m.kind != "store_connect_failed"]
        retries = [m for m in found if m.kind == "store_connect_failed"]
        if not strong and len(retries) < 3:
            return
        joined = next((m for m in found if m.kind in ("store_barrier_timeout",
                                                       "store_clients_timeout")), None)
        connect = next((m for m in found if m.kind == "store_connect_timeout"), None)
        if joined is not None:
            title = (f"Rendezvous failed: only {joined.fields['joined']} of "
                     f"{joined.fields['world']} workers joined")
            explanation = ("The process group waited for all its workers and some never came: "
                           "a node that did not start (or crashed at start-up), a wrong world "
                           "size, or workers that cannot reach the store.")
        elif connect is not None:
            address = (f"{connect.fields['host']}:{connect.fields['port']}"
                       if "host" in connect.fields else connect.fields.get("address", "?"))
            title = f"Rendezvous failed: could not reach the store at {address}"
            explanation = (f"This worker tried for {connect.fields['after']} to connect to the "
                           f"rendezvous store at {address} (MASTER_ADDR:MASTER_PORT or "
                           "--rdzv_endpoint) and never got through: the store's host did not "
                           "start it, the address is wrong or not reachable from here, or a "
                           "firewall blocks the port.")
        else:
            first = (strong or retries)[0]
            title = f"Rendezvous failed ({first.fields.get('error', 'store connection')})"
            explanation = ("torchrun's rendezvous did not complete: not every node joined in "
                           "time, or the rendezvous endpoint could not be reached.")
        yield Finding(
            id=self.id, category=self.category, severity=Severity.ERROR, confidence=0.85,
            title=title, explanation=explanation, evidence=tuple(_cite(strong + retries)),
            fixes=(
                "Check that every node started, and runs the same command with the same "
                "--nnodes, --nproc_per_node and world size (a node that crashed or was never "
                "scheduled leaves the others waiting).",
                "From each worker, test the endpoint: `nc -zv MASTER_ADDR MASTER_PORT`; "
                "MASTER_ADDR must be an address the other nodes can reach (not localhost), and "
                "the port must be open in the firewall or security group.",
                "A port still held by a previous run makes the store fail to start: pick another "
                "MASTER_PORT or end the leftover processes.",
                "Pin the network interface with NCCL_SOCKET_IFNAME / GLOO_SOCKET_IFNAME when the "
                "nodes have several.",
            ),
        )

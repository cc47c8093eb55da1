"""Rules that diagnose from log lines alone: the job's output (training, torchrun, NCCL, gloo)
and the kernel log. They serve `hangdoctor analyze train.log dmesg.txt ...` for a past failure,
and `hangdoctor run`, whose bundles carry the same two kinds of lines.

HD150 process.blocked_io, HD250 data.worker_killed (shared memory), HD251 data.pipeline_stall,
HD350 distributed.collective_timeout, HD351 distributed.network, HD352 distributed.rank_exited,
HD353 distributed.rendezvous, HD450 gpu.device_fault, HD550 env.version_incompatible,
HD551 env.library_mismatch, HD552 env.os_limits, HD650 algorithm.nonfinite.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence

from hangdoctor.analysis.job import JobView
from hangdoctor.analysis.logs import (
    SIGNAL_NAMES,
    LogMatch,
    RankFailure,
    line_rank,
    scan,
    step_near,
    torchrun_failures,
)
from hangdoctor.evidence.logfiles import log_bundle
from hangdoctor.evidence.model import Bundle
from hangdoctor.rules.base import Example, Rule
from hangdoctor.rules.finding import Culprit, Finding, Severity

_MAX_EVIDENCE = 6
_MAX_LINE = 400

FLIGHT_RECORDER_DOCS = "https://docs.pytorch.org/tutorials/prototype/flight_recorder_tutorial.html"


# --- shared helpers ---------------------------------------------------------------------------
def _logs(output: Sequence[str] = (), kernel: Sequence[str] = ()) -> Bundle:
    """A log-only bundle, as `hangdoctor analyze FILE...` builds it."""
    return log_bundle(tuple(output), tuple(kernel))


def _output(job: JobView) -> tuple[str, ...]:
    return job.bundle.job.output_tail if job.bundle.job else ()


def _kernel(job: JobView) -> tuple[str, ...]:
    return job.bundle.job.kernel_log if job.bundle.job else ()


def _found(job: JobView, *kinds: str, kernel: bool = False) -> list[LogMatch]:
    lines = _kernel(job) if kernel else _output(job)
    return [m for m in scan(lines) if m.kind in kinds]


def _clip(line: str) -> str:
    return line if len(line) <= _MAX_LINE else line[: _MAX_LINE - 3] + "..."


def _cite(matches: Iterable[LogMatch], where: str = "log", limit: int = _MAX_EVIDENCE,
          ) -> list[str]:
    """Evidence lines, one per distinct message, at most `limit`."""
    out: list[str] = []
    seen: set[str] = set()
    for match in matches:
        if match.line in seen:
            continue
        seen.add(match.line)
        out.append(f"{where}: {_clip(match.line)}")
        if len(out) >= limit:
            break
    return out


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


# --- HD450 gpu.device_fault ------------------------------------------------------------------
# What an Xid means and what to do, from NVIDIA's Xid catalogue
# (https://docs.nvidia.com/deploy/xid-errors/analyzing-xid-catalog.html) and the application
# error list of NVIDIA's k8s-device-plugin (internal/rm/health.go): 13, 31, 43, 45, 68, 109 are
# the application's fault and leave the GPU healthy; the others need the node looked at.
_APP = "application"
_NODE = "node"
_XIDS: dict[int, tuple[str, str, str]] = {
    13: ("Graphics Engine Exception: a kernel hit an illegal instruction or out-of-range access",
         _APP, "Rerun with CUDA_LAUNCH_BLOCKING=1 and under `compute-sanitizer` to find the "
         "kernel; the GPU itself is fine."),
    31: ("GPU memory page fault: a kernel accessed an invalid address", _APP,
         "Rerun with CUDA_LAUNCH_BLOCKING=1 and under `compute-sanitizer` to find the kernel "
         "(often a custom op or an index out of range); the GPU itself is fine."),
    43: ("GPU stopped processing: the application's context hit a fault", _APP,
         "Restart the job; look at the Xid before it for the cause."),
    45: ("Preemptive cleanup after earlier errors or a killed process", _APP,
         "Follows other errors: look at the Xid before it."),
    68: ("Video decoder (NVDEC) exception", _APP, "Restart the job; check the decoding code."),
    109: ("Context switch timeout: a kernel ran too long or hung", _APP,
          "Restart the job; look for a kernel that never ends."),
    48: ("Double-bit ECC error: uncorrectable device memory error", _NODE,
         "Reset the GPU (`nvidia-smi -r`) or reboot; drain the node if it repeats."),
    63: ("Row remapping pending: a memory row was marked for remapping", _NODE,
         "Reset the GPU when it is idle to apply the remapping (`nvidia-smi -r`)."),
    64: ("Row remapping failed", _NODE,
         "Drain the node and have the GPU replaced (RMA)."),
    74: ("NVLink error", _NODE,
         "Reset the GPUs or reboot the node; drain it if it repeats "
         "(`nvidia-smi nvlink -s` shows link state)."),
    79: ("GPU has fallen off the bus: it no longer answers on PCIe", _NODE,
         "Drain the node and reboot it; if it repeats, check power, cooling, seating and "
         "PCIe/BIOS firmware."),
    94: ("Contained ECC error: only the application using that memory was affected", _NODE,
         "Restart the job; reset the GPU when idle to retire the page."),
    95: ("Uncontained ECC error: every application on the GPU is affected", _NODE,
         "Drain the node and reset the GPU (or reboot)."),
    119: ("GSP RPC timeout: the GPU's system processor stopped answering", _NODE,
          "Reset the GPU or reboot the node; update the driver if it repeats."),
}
_FATAL_AER = re.compile(r"Uncorrect", re.IGNORECASE)


class GpuDeviceFault(Rule):
    """The GPU, its bus or its driver faulted: NVIDIA Xid lines, a GPU fallen off the bus, PCIe
    Advanced Error Reporting. Says whether the application or the node is at fault."""

    id = "HD450"
    category = "gpu.device_fault"
    summary = "the GPU or its bus faulted"
    specificity = 90
    names_culprit = False
    fires_on = (
        Example("GPU fell off the bus", lambda: _logs(kernel=[
            "[1375242.518414] NVRM: Xid (PCI:0000:3b:00): 79, pid=48213, name=python, "
            "GPU has fallen off the bus.",
            "[1375242.518421] NVRM: GPU 0000:3b:00.0: GPU has fallen off the bus."])),
        Example("an application's page fault", lambda: _logs(kernel=[
            "[ 5310.113210] NVRM: Xid (PCI:0000:65:00): 31, pid=9120, name=python3, Ch 00000010, "
            "intr 10000000. MMU Fault: ENGINE GRAPHICS GPCCLIENT_T1_0 faulted @ 0x7f1_2c000000."
            " Fault is of type FAULT_PDE ACCESS_TYPE_VIRT_READ"])),
        Example("fatal PCIe error on the GPU", lambda: _logs(kernel=[
            "[ 9120.2] pcieport 0000:3a:00.0: AER: Uncorrected (Fatal) error received: "
            "0000:3b:00.0",
            "[ 9120.3] nvidia 0000:3b:00.0: PCIe Bus Error: severity=Uncorrected (Fatal), "
            "type=Transaction Layer, (Receiver ID)"])),
    )
    quiet_on = (
        Example("ordinary driver messages", lambda: _logs(kernel=[
            "[   12.1] NVRM: loading NVIDIA UNIX x86_64 Kernel Module  550.54.15",
            "[   13.0] nvidia-modeset: Loading NVIDIA Kernel Mode Setting Driver"])),
    )

    def check(self, job: JobView) -> Iterable[Finding]:
        matches = [m for lines in (_kernel(job), _output(job)) for m in scan(lines)
                   if m.kind in ("xid", "gpu_lost", "pcie_error")]
        if not matches:
            return
        xids = [m for m in matches if m.kind == "xid"]
        lost = [m for m in matches if m.kind == "gpu_lost"]
        pcie = [m for m in matches if m.kind == "pcie_error"]
        codes = sorted({int(m.fields["xid"]) for m in xids})
        node = [c for c in codes if _XIDS.get(c, ("", _NODE, ""))[1] == _NODE]
        fatal = [m for m in pcie if _FATAL_AER.search(m.fields.get("severity", ""))]
        if node or lost or fatal:
            severity, confidence = Severity.CRITICAL, 0.95
        elif codes or (pcie and not all("Correct" in m.fields.get("severity", "")
                                        for m in pcie)):
            severity, confidence = Severity.ERROR, 0.85
        else:
            severity, confidence = Severity.WARNING, 0.6
        devices = sorted({re.sub(r"\.\d+$", "", m.fields["device"])
                          for m in (*xids, *lost, *pcie) if m.fields.get("device")})
        device = f" on {', '.join(devices[:3])}" if devices else ""
        if 79 in codes or lost:
            title = f"GPU fell off the bus{device} (Xid 79)"
        elif codes:
            worst = (node or codes)[0]
            meaning = _XIDS.get(worst, ("see NVIDIA's Xid catalogue", "", ""))[0].split(":")[0]
            title = f"GPU fault{device}: Xid {worst} ({meaning})"
        else:
            title = (f"PCIe {'fatal ' if fatal else ''}bus error{device}"
                     if fatal or severity is not Severity.WARNING
                     else f"Corrected PCIe errors{device}")
        parts: list[str] = []
        fixes: list[str] = []
        for code in codes:
            meaning, owner, action = _XIDS.get(code, (
                "not in hangdoctor's table; look it up in NVIDIA's Xid catalogue", _NODE,
                "Look the Xid up in NVIDIA's catalogue and follow its resolution."))
            verdict = ("the application is at fault, the GPU is healthy" if owner == _APP
                       else "the node needs attention")
            parts.append(f"Xid {code}: {meaning} ({verdict}).")
            fixes.append(f"Xid {code}: {action}")
        if lost and 79 not in codes:
            parts.append("The driver reports the GPU fell off the bus: it no longer answers.")
            fixes.append(_XIDS[79][2])
        if pcie:
            parts.append(f"PCIe Advanced Error Reporting logged {len(pcie)} bus error(s)"
                         + (", uncorrected" if fatal else ", all corrected") + ".")
            fixes.append("Check the link (`sudo lspci -vv -s <bus id> | grep -E 'LnkSta|UESta'`),"
                         " reseat the GPU or riser, and update BIOS/PCIe firmware.")
        if severity is Severity.CRITICAL:
            fixes.append("Take the node out of service before rerunning (Slurm: `scontrol update "
                         "nodename=<node> state=drain reason=gpu-xid`), and attach "
                         "`nvidia-bug-report.sh` output if you contact support.")
        culprit_pid = next((m.pids[0] for m in xids if m.pids), None)
        evidence = _cite(sorted(matches, key=lambda m: (m.kind != "xid", m.index)),
                         "kernel log")
        yield Finding(
            id=self.id, category=self.category, severity=severity, confidence=confidence,
            title=title, explanation=" ".join(parts),
            culprit=Culprit(pid=culprit_pid) if culprit_pid else None,
            evidence=tuple(evidence), fixes=tuple(dict.fromkeys(fixes)),
        )


# --- HD150 process.blocked_io (hung tasks in the kernel log) ---------------------------------
_FRAME = re.compile(r"(?:\]|\s)\s*(?:\? )?([A-Za-z_][\w.]*)\+0x[0-9a-f]+/0x[0-9a-f]+")
_GENERIC_FRAMES = re.compile(
    r"^(?:__?schedule\w*|schedule\w*|io_schedule\w*|__?mutex_lock\w*|mutex_lock\w*|"
    r"rwsem_down\w*|down_\w+|wait_for_completion\w*|__wait_on_\w+|wait_on_\w+|bit_wait\w*|"
    r"out_of_line_wait_on_bit\w*|__x64_sys_\w+|do_syscall_64|entry_SYSCALL\w*|ret_from_fork\w*|"
    r"kthread|worker_thread|process_one_work|__switch_to\w*|\w*_slowpath|"
    r"finish_task_switch\w*|rwsem\w*|__lock\w*|lock_\w+|do_\w+|vfs_\w+|ksys_\w+|"
    r"__do_sys\w*|path_\w+|filemap_\w+|folio_\w+|__folio_\w+)$")
_SUBSYSTEMS = (("nfs", "NFS"), ("rpc_", "NFS (SUNRPC)"), ("fuse", "a FUSE filesystem (s3fs, "
               "gcsfuse, blobfuse, sshfs...)"), ("ll_", "Lustre"), ("lustre", "Lustre"),
               ("ceph", "CephFS"), ("gpfs", "GPFS"), ("jbd2", "the local ext4 journal"),
               ("ext4", "the local ext4 disk"), ("xfs", "the local XFS disk"),
               ("btrfs", "the local btrfs disk"), ("blk_", "a block device"),
               ("_nv", "the NVIDIA driver"), ("nvidia", "the NVIDIA driver"),
               ("uvm", "the NVIDIA driver (UVM)"))
_JOB_TASK = re.compile(r"^(?:python|pt_|torchrun|accelerate|deepspeed|ray|train|pytorch)",
                       re.IGNORECASE)


def _blocked_in(lines: tuple[str, ...], index: int) -> str | None:
    """The subsystem a hung task waits in, from the call trace printed after its line."""
    for line in lines[index + 1 : index + 40]:
        if "blocked for more than" in line:
            break
        for name in _FRAME.findall(line):
            if _GENERIC_FRAMES.match(name):
                continue
            for prefix, subsystem in _SUBSYSTEMS:
                if name.startswith(prefix) or f"_{prefix}" in name:
                    return subsystem
    return None


class HungTaskInKernelLog(Rule):
    """The kernel's hung-task detector saw a task stuck in uninterruptible sleep (state D): it
    waits for storage or a driver that does not answer, and cannot even be killed."""

    id = "HD150"
    category = "process.blocked_io"
    summary = "a task was blocked in the kernel (hung task)"
    specificity = 60
    fires_on = (
        Example("python stuck on NFS", lambda: _logs(kernel=[
            "[43500.179242] INFO: task python3:1339 blocked for more than 120 seconds.",
            "[43500.179254]       Not tainted 5.15.0-105-generic #115-Ubuntu",
            '[43500.179265] "echo 0 > /proc/sys/kernel/hung_task_timeout_secs" disables this '
            "message.",
            "[43500.179276] task:python3         state:D stack:0     pid:1339  ppid:1300",
            "[43500.179290] Call Trace:",
            "[43500.179293]  <TASK>",
            "[43500.179300]  __schedule+0x2b8/0x7fc",
            "[43500.179302]  schedule+0x69/0x110",
            "[43500.179305]  rpc_wait_bit_killable+0x1e/0xa0 [sunrpc]",
            "[43500.179310]  nfs_file_read+0x4f/0xa0 [nfs]"])),
    )
    quiet_on = (
        Example("no hung task", lambda: _logs(kernel=[
            "[   99.0] EXT4-fs (nvme0n1p1): mounted filesystem with ordered data mode."])),
    )

    def check(self, job: JobView) -> Iterable[Finding]:
        kernel = _kernel(job)
        hung = [m for m in scan(kernel) if m.kind == "hung_task"]
        if not hung:
            return
        tasks: dict[int, LogMatch] = {}
        for match in hung:
            tasks.setdefault(match.pids[0], match)
        first = next((m for m in tasks.values() if _JOB_TASK.match(m.fields["comm"])),
                     next(iter(tasks.values())))
        comm, pid = first.fields["comm"], first.pids[0]
        where = _blocked_in(kernel, first.index)
        job_task = bool(_JOB_TASK.match(comm))
        title = (f"Task {comm} (pid {pid}) was blocked in the kernel for more than "
                 f"{first.fields['seconds']} s" + (f", in {where}" if where else ""))
        others = [m for m in tasks.values() if m is not first]
        evidence = _cite([first, *others], "kernel log", limit=4)
        if others:
            evidence.append(f"{len(tasks)} tasks were reported blocked in all")
        yield Finding(
            id=self.id, category=self.category,
            severity=Severity.ERROR if job_task else Severity.WARNING,
            confidence=0.8 if job_task else 0.5, title=title,
            explanation=("The task sat in uninterruptible sleep (state D), waiting inside the "
                         "kernel for storage or a driver that did not answer"
                         + (f" ({where})" if where else "")
                         + "; such a task cannot be killed until the I/O completes."),
            culprit=Culprit(pid=pid, thread=comm), evidence=tuple(evidence),
            fixes=(
                "While it hangs, see where: `sudo cat /proc/PID/stack`, and `mount` for the "
                "network filesystem (NFS, FUSE, Lustre) it reads.",
                "Read training data from local disk (copy it to local NVMe first, or use a "
                "local cache) instead of a network mount; for NFS check the server and the "
                "mount options (hard/soft, timeo).",
                "A task in state D survives SIGKILL: fix or remount the storage, or reboot the "
                "node.",
            ),
        )


# --- HD550 env.version_incompatible ----------------------------------------------------------
def _cuda_version(encoded: str) -> str:
    """CUDA's integer version (11040) as 11.4."""
    value = int(encoded)
    return f"{value // 1000}.{(value % 1000) // 10}"


class VersionIncompatible(Rule):
    """The framework, CUDA and driver versions do not fit this GPU or each other."""

    id = "HD550"
    category = "env.version_incompatible"
    summary = "mismatched PyTorch / CUDA / driver versions"
    specificity = 85
    names_culprit = False
    fires_on = (
        Example("no kernel image for this GPU", lambda: _logs([
            "UserWarning: NVIDIA H100 80GB HBM3 with CUDA capability sm_90 is not compatible "
            "with the current PyTorch installation.",
            "The current PyTorch install supports CUDA capabilities sm_37 sm_50 sm_60 sm_70.",
            "RuntimeError: CUDA error: no kernel image is available for execution on the "
            "device"])),
        Example("driver too old", lambda: _logs([
            "RuntimeError: The NVIDIA driver on your system is too old (found version 11040). "
            "Please update your GPU driver by downloading and installing a new version from "
            "the URL: http://www.nvidia.com/Download/index.aspx"])),
        Example("driver insufficient for the runtime", lambda: _logs([
            "RuntimeError: CUDA error: CUDA driver version is insufficient for CUDA runtime "
            "version"])),
    )
    quiet_on = (
        Example("a CUDA out-of-memory error", lambda: _logs([
            "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB."])),
    )

    def check(self, job: JobView) -> Iterable[Finding]:
        found = _found(job, "no_kernel_image", "arch_unsupported", "arch_supported",
                       "driver_insufficient", "driver_too_old")
        if not found:
            return
        kinds = {m.kind for m in found}
        arch = next((m for m in found if m.kind == "arch_unsupported"), None)
        supported = next((m for m in found if m.kind == "arch_supported"), None)
        old = next((m for m in found if m.kind == "driver_too_old"), None)
        if kinds & {"no_kernel_image", "arch_unsupported"}:
            gpu = f" ({arch.fields['gpu']}, {arch.fields['arch']})" if arch else ""
            title = f"This PyTorch build has no code for this GPU{gpu}"
            explanation = ("The CUDA kernels in the installed build (or in an extension) were "
                           "not compiled for this GPU's architecture"
                           + (f"; the build supports {supported.fields['archs'].strip()}"
                              if supported else "") + ".")
            fixes = (
                "Compare `python -c 'import torch; print(torch.__version__, "
                "torch.cuda.get_arch_list(), torch.cuda.get_device_capability())'`, then install "
                "a build that includes your GPU, e.g. `pip install torch --index-url "
                "https://download.pytorch.org/whl/cu128` (newer GPUs need newer CUDA builds; "
                "old GPUs may need an older torch).",
                "For your own CUDA extensions, rebuild them with TORCH_CUDA_ARCH_LIST set to "
                "your GPU's capability (e.g. TORCH_CUDA_ARCH_LIST=9.0).",
            )
        else:
            supports = (f" (it supports CUDA up to {_cuda_version(old.fields['found'])})"
                        if old else "")
            title = f"The NVIDIA driver is too old for this PyTorch's CUDA{supports}"
            explanation = ("The CUDA runtime bundled with PyTorch needs a newer driver than the "
                           "one installed" + supports + ".")
            fixes = (
                "Upgrade the NVIDIA driver (`nvidia-smi` shows the highest CUDA version it "
                "supports), or install a PyTorch build for a CUDA that driver supports, e.g. "
                "`pip install torch --index-url https://download.pytorch.org/whl/cu118`.",
                "In a container the driver is the host's: the host driver must be new enough "
                "for the image's CUDA (or use the CUDA forward-compatibility package on "
                "data-centre GPUs).",
            )
        yield Finding(
            id=self.id, category=self.category, severity=Severity.ERROR, confidence=0.95,
            title=title, explanation=explanation, evidence=tuple(_cite(found)), fixes=fixes,
        )


# --- HD551 env.library_mismatch --------------------------------------------------------------
def _module(path: str) -> str:
    """`flash_attn_2_cuda` from `.../flash_attn_2_cuda.cpython-310-x86_64-linux-gnu.so`."""
    return re.sub(r"(\.cpython-[^/]*|\.abi3)?\.so[\w.]*$", "", path.rsplit("/", 1)[-1])


def _symbol_owner(symbol: str) -> str | None:
    if re.match(r"_ZN?K?\d*(?:3c10|2at|5torch|4c10d)", symbol.replace("_ZNK", "_ZN")):
        return "PyTorch (it was compiled against a different torch version)"
    for prefix, owner in (("nccl", "NCCL"), ("cudnn", "cuDNN"), ("cublas", "cuBLAS"),
                          ("cuda", "the CUDA runtime"), ("Py", "the Python interpreter")):
        if symbol.startswith(prefix):
            return owner
    return None


class LibraryMismatch(Rule):
    """User-space libraries disagree: an extension built on a newer system (glibc, libstdc++),
    against another torch (undefined C++ symbols), or for a CUDA runtime that is not here."""

    id = "HD551"
    category = "env.library_mismatch"
    summary = "user-space libraries do not match"
    specificity = 85
    names_culprit = False
    fires_on = (
        Example("extension needs a newer glibc", lambda: _logs([
            "ImportError: /lib64/libc.so.6: version `GLIBC_2.32' not found (required by "
            "/opt/venv/lib/python3.10/site-packages/flash_attn_2_cuda.cpython-310-x86_64-"
            "linux-gnu.so)"])),
        Example("extension built for another torch", lambda: _logs([
            "    import flash_attn_2_cuda as flash_attn_gpu",
            "ImportError: /opt/venv/lib/python3.10/site-packages/flash_attn_2_cuda.cpython-310-"
            "x86_64-linux-gnu.so: undefined symbol: _ZN3c105ErrorC2ENS_14SourceLocationENSt7__"
            "cxx1112basic_stringIcSt11char_traitsIcESaIcEEE"])),
        Example("missing CUDA runtime library", lambda: _logs([
            "OSError: libcudart.so.11.0: cannot open shared object file: No such file or "
            "directory"])),
    )
    quiet_on = (
        Example("an ordinary ImportError", lambda: _logs([
            "ModuleNotFoundError: No module named 'wandb'"])),
    )

    def check(self, job: JobView) -> Iterable[Finding]:
        found = _found(job, "symbol_version_missing", "undefined_symbol", "shared_object_missing")
        if not found:
            return
        first = found[0]
        fields = first.fields
        if first.kind == "symbol_version_missing":
            version, library = fields["version"], fields["library"]
            needed_by = fields.get("required_by")
            who = f"`{_module(needed_by)}`" if needed_by else "a binary"
            title = f"{who} needs {version}, which {library} does not provide"
            if version.startswith("GLIBCXX") or version.startswith("CXXABI"):
                explanation = (f"{who} was built with a newer C++ compiler than the libstdc++ "
                               f"loaded here ({library}).")
                fixes = (
                    "Load a newer libstdc++: in conda, `conda install -c conda-forge "
                    "libstdcxx-ng` and make sure the env's lib comes first "
                    "(LD_LIBRARY_PATH=$CONDA_PREFIX/lib); or use a newer base image.",
                    f"Or install a build of {who} made for this system.",
                )
            else:
                explanation = (f"{who} was built on a newer Linux (glibc with {version}) than "
                               f"this machine or container has (`ldd --version`).")
                fixes = (
                    f"Install a wheel of {who} built for this glibc (a manylinux tag not newer "
                    "than `ldd --version`), or build it here from source "
                    "(`pip install --no-binary :all: <package>`).",
                    "Or run in a container with a newer base image (e.g. Ubuntu 22.04 has "
                    "glibc 2.35).",
                )
        elif first.kind == "undefined_symbol":
            module = _module(fields["library"])
            owner = _symbol_owner(fields["symbol"])
            title = f"`{module}` does not match the installed libraries (undefined symbol)"
            explanation = (f"The extension `{module}` expects a symbol that the loaded "
                           f"libraries do not have ({_clip(fields['symbol'])[:120]})"
                           + (f": it belongs to {owner}." if owner else "."))
            fixes = (
                f"Rebuild `{module}` against the installed torch: `pip uninstall -y <package> && "
                "pip install <package> --no-build-isolation --no-cache-dir`.",
                "Or pick the prebuilt wheel that matches exactly: `python -c 'import torch; "
                "print(torch.__version__, torch.version.cuda, "
                "torch._C._GLIBCXX_USE_CXX11_ABI)'` gives the torch version, CUDA version and "
                "cxx11abi flag its name must carry.",
            )
        else:
            library = fields["library"]
            title = f"Shared library {library} is missing"
            explanation = (f"A binary needs {library}, which is not installed or not on the "
                           "loader's path: usually a package built for another CUDA version "
                           "than the one in this environment.")
            fixes = (
                "Install the build of the package that matches this environment's CUDA (see "
                "`python -c 'import torch; print(torch.version.cuda)'`), or the library "
                "itself (e.g. the nvidia-cuda-runtime-cuXX pip package).",
                f"Check LD_LIBRARY_PATH and `ldconfig -p | grep {library.split('.so')[0]}`.",
            )
        yield Finding(
            id=self.id, category=self.category, severity=Severity.ERROR, confidence=0.95,
            title=title, explanation=explanation, evidence=tuple(_cite(found)), fixes=fixes,
        )


# --- HD552 env.os_limits ---------------------------------------------------------------------
class OpenFilesLimit(Rule):
    """The job ran out of file descriptors (`ulimit -n`), often because DataLoader workers pass
    every tensor as a descriptor."""

    id = "HD552"
    category = "env.os_limits"
    summary = "out of file descriptors"
    specificity = 70
    names_culprit = False
    fires_on = (
        Example("EMFILE", lambda: _logs([
            "OSError: [Errno 24] Too many open files: '/data/shards/train-00042.tar'"])),
        Example("descriptors lost between DataLoader workers", lambda: _logs([
            "  File \"/usr/lib/python3.10/multiprocessing/reduction.py\", line 164, in recvfds",
            "RuntimeError: received 0 items of ancdata"])),
    )
    quiet_on = (
        Example("nothing about descriptors", lambda: _logs(["epoch 2 done"])),
    )

    def check(self, job: JobView) -> Iterable[Finding]:
        found = _found(job, "too_many_open_files")
        if not found:
            return
        yield Finding(
            id=self.id, category=self.category, severity=Severity.ERROR, confidence=0.9,
            title="The job ran out of file descriptors (ulimit -n)",
            explanation=("The process hit its limit on open files. DataLoader workers send "
                         "each tensor to the main process as a file descriptor, so many workers "
                         "or large batches exhaust a low limit (often 1024)."),
            evidence=tuple(_cite(found)),
            fixes=(
                "Raise the limit before launching: `ulimit -n 65536` (Docker: `--ulimit "
                "nofile=65536:65536`; systemd: LimitNOFILE=; Slurm: check "
                "PropagateResourceLimits).",
                "Or call `torch.multiprocessing.set_sharing_strategy('file_system')` at start, "
                "which needs far fewer descriptors.",
                "Look for files or sockets opened per step or per sample and never closed.",
            ),
        )


# --- HD250 data.worker_killed (shared memory) ------------------------------------------------
class SharedMemoryExhausted(Rule):
    """/dev/shm filled up: DataLoader workers pass tensors through shared memory, and when it is
    full they fail to write (ENOSPC) or die of SIGBUS."""

    id = "HD250"
    category = "data.worker_killed"
    summary = "shared memory (/dev/shm) exhausted"
    specificity = 80
    names_culprit = False
    fires_on = (
        Example("no space for a shared tensor", lambda: _logs([
            "RuntimeError: unable to write to file </torch_8289_606636967_0>: No space left on "
            "device (28)",
            "ERROR: Unexpected bus error encountered in worker. This might be caused by "
            "insufficient shared memory (shm)."])),
        Example("a bus error with DataLoader workers", lambda: _logs([
            "epoch 0:  31%|###       | 310/1000 [02:11<04:52,  2.36it/s]",
            "Bus error (core dumped)"])),
    )
    quiet_on = (
        Example("a full data disk, not /dev/shm", lambda: _logs([
            "OSError: [Errno 28] No space left on device: '/ckpt/step_1000.pt'"])),
        Example("HD202 already explains the worker's SIGBUS", lambda: _logs([
            "ERROR: Unexpected bus error encountered in worker. This might be caused by "
            "insufficient shared memory (shm).",
            "RuntimeError: DataLoader worker (pid 4242) is killed by signal: Bus error. It is "
            "possible that dataloader's workers are out of shared memory. Please try to raise "
            "your shared memory limit."])),
    )

    def check(self, job: JobView) -> Iterable[Finding]:
        found = _found(job, "shm_exhausted", "bus_error", "worker_killed")
        if any(m.kind == "worker_killed" and (m.detail or "").strip() == "Bus error"
               for m in found):
            return  # HD202 names the worker and gives the same advice
        shm = [m for m in found if m.kind == "shm_exhausted"]
        bus = [m for m in found if m.kind == "bus_error"]
        if not shm and not bus:
            return
        yield Finding(
            id=self.id, category=self.category, severity=Severity.ERROR,
            confidence=0.9 if shm else 0.6,
            title="Shared memory (/dev/shm) ran out" if shm else
            "A process died of SIGBUS (Bus error): most likely /dev/shm is full",
            explanation=("DataLoader workers hand batches to the training process through "
                         "shared memory (/dev/shm). It filled up, so workers could not write "
                         "their tensors"
                         + (" and died of SIGBUS" if bus or any("bus error" in m.line.lower()
                                                              for m in shm) else "")
                         + ". Docker gives containers only 64 MB of /dev/shm by default."),
            evidence=tuple(_cite([*shm, *bus])),
            fixes=(
                "Check `df -h /dev/shm`, then give the job more: `docker run --shm-size=16g` "
                "(or `--ipc=host`); Kubernetes: mount an emptyDir with medium: Memory at "
                "/dev/shm.",
                "Or use less: fewer DataLoader workers, smaller prefetch_factor or batches, or "
                "`torch.multiprocessing.set_sharing_strategy('file_system')`.",
            ),
        )


# --- HD251 data.pipeline_stall (DataLoader timeout) ------------------------------------------
class DataLoaderTimeout(Rule):
    """DataLoader(timeout=N) expired: no batch arrived for N seconds, so a worker is stuck or
    too slow."""

    id = "HD251"
    category = "data.pipeline_stall"
    summary = "the DataLoader timed out waiting for a batch"
    specificity = 75
    names_culprit = False
    fires_on = (
        Example("DataLoader timed out", lambda: _logs([
            "  File \"/opt/venv/lib/python3.10/site-packages/torch/utils/data/dataloader.py\", "
            "line 1150, in _get_data",
            "RuntimeError: DataLoader timed out after 120 seconds"])),
    )
    quiet_on = (
        Example("a slow but progressing loader", lambda: _logs([
            "step 10 data_time 2.1s", "step 11 data_time 2.3s"])),
    )

    def check(self, job: JobView) -> Iterable[Finding]:
        found = _found(job, "dataloader_timeout")
        if not found:
            return
        seconds = found[0].fields["seconds"]
        yield Finding(
            id=self.id, category=self.category, severity=Severity.ERROR, confidence=0.85,
            title=f"The DataLoader waited {seconds} s for a batch and gave up",
            explanation=("No DataLoader worker delivered a batch within the timeout: a worker "
                         "is blocked in the dataset (a network or storage read without a "
                         "timeout, a lock copied into it by fork, a deadlocked library) or is "
                         "far slower than the training step."),
            culprit=Culprit(rank=found[0].number("rank"), role="rank")
            if found[0].number("rank") is not None else None,
            evidence=tuple(_cite(found)),
            fixes=(
                "Capture the workers while they wait: `hangdoctor run -- python train.py` (or "
                "`hangdoctor dump PID`) shows the line each worker is blocked on.",
                "Reproduce in one process with num_workers=0 to see the blocking call in a "
                "plain traceback.",
                "Give network and storage reads in __getitem__ a timeout and a retry; raise "
                "DataLoader(timeout=...) only if batches are legitimately that slow.",
            ),
        )


# --- HD650 algorithm.nonfinite ---------------------------------------------------------------
_FINITE_LOSS = re.compile(r"\bloss['\"]?\s*[:=]?\s*(?:tensor\()?([-+]?\d+(?:\.\d+)?(?:e[-+]?\d+)?)",
                          re.IGNORECASE)
# Values that start at infinity on purpose: the best loss so far, a loss scale.
_NOT_A_TRAINING_VALUE = re.compile(r"best|min|prev|scale", re.IGNORECASE)
#: Dynamic loss scaling skips a few steps now and then: that is how it works. Only many skips,
#: or a scale driven down to almost nothing, say the gradients are really non-finite.
_OVERFLOWS_WORTH_A_WARNING = 20
_COLLAPSED_SCALE = 1.0


class NonFiniteFromLog(Rule):
    """The loss (or the gradients) became NaN or Inf; says at which step, and what the loss
    was before."""

    id = "HD650"
    category = "algorithm.nonfinite"
    summary = "loss or gradients became NaN/Inf"
    specificity = 60
    names_culprit = False
    fires_on = (
        Example("loss turns nan", lambda: _logs([
            "step 1200 | loss 2.3141 | lr 3.0e-04", "step 1210 | loss 2.9876 | lr 3.0e-04",
            "step 1220 | loss nan | lr 3.0e-04"])),
        Example("Hugging Face Trainer", lambda: _logs([
            "{'loss': 1.2032, 'grad_norm': 3.1, 'learning_rate': 1.9e-05, 'epoch': 0.41}",
            "{'loss': nan, 'grad_norm': nan, 'learning_rate': 1.9e-05, 'epoch': 0.42}"])),
        Example("loss scale collapsed", lambda: _logs([
            *(f"[2026-02-01 10:{i:02d}:00,000] [INFO] [loss_scaler.py:183:update_scale] "
              f"[deepspeed] OVERFLOW! Rank 0 Skipping step. Attempted loss scale: {2.0 ** -i}, "
              f"reducing to {2.0 ** -(i + 1)}" for i in range(3)),
            "Exception: Current loss scale already at minimum - cannot decrease scale anymore. "
            "Exiting run."])),
        Example("anomaly mode names the op", lambda: _logs([
            "RuntimeError: Function 'LogSoftmaxBackward0' returned nan values in its 0th "
            "output."])),
    )
    quiet_on = (
        Example("finite losses, INFO lines", lambda: _logs([
            "INFO step 10 loss: 0.5213", "INFO step 20 loss: 0.4980 (inference skipped)"])),
        Example("a few overflows while the loss scale settles", lambda: _logs([
            "Gradient overflow.  Skipping step, loss scaler 0 reducing loss scale to 32768.0",
            "Gradient overflow.  Skipping step, loss scaler 0 reducing loss scale to 16384.0",
            "{'loss': 4.2113, 'grad_norm': nan, 'learning_rate': 2e-05, 'epoch': 0.01}",
            "step 10 loss 4.21 best_loss=inf"])),
    )

    def check(self, job: JobView) -> Iterable[Finding]:
        record = job.record
        if record is not None and any(p.nonfinite_losses for p in record.progress):
            return  # the instrumentation saw it first-hand: HD601 reports it
        lines = _output(job)
        found = scan(lines)
        values = [m for m in found if m.kind == "nonfinite_value"
                  and not _NOT_A_TRAINING_VALUE.search(m.fields.get("key", ""))]
        # A non-finite gradient norm next to a finite loss is a step the grad scaler skipped.
        skipped = [m for m in values if "loss" not in m.fields["key"].lower()
                   and _FINITE_LOSS.search(m.line)]
        counted = {id(m) for m in values} - {id(m) for m in skipped}
        bad = [m for m in found if m.kind in ("nonfinite_detected", "loss_scale_collapsed")
               or id(m) in counted]
        overflows = [m for m in found if m.kind == "loss_scale_overflow"] + skipped
        scales = [float(m.fields["scale"]) for m in overflows
                  if _is_number(m.fields.get("scale"))]
        collapsed = bool(scales) and min(scales) < _COLLAPSED_SCALE
        if not bad and not collapsed and len(overflows) < _OVERFLOWS_WORTH_A_WARNING:
            return
        first = bad[0] if bad else overflows[0]
        step = step_near(lines, first.index)
        at = f" at step {step}" if step is not None else ""
        evidence = _cite([first], limit=1)
        before = _finite_losses_before(lines, first.index)
        diverged = len(before) >= 3 and before[0][0] > 0 and before[-1][0] / before[0][0] >= 10
        if before:
            evidence.append(f"last finite loss before it: {before[-1][0]:g} "
                            f"({_clip(before[-1][1])})")
        if diverged:
            evidence.append(f"the loss climbed from {before[0][0]:g} to {before[-1][0]:g} over "
                            f"the {len(before)} values logged before it")
        evidence += _cite([m for m in bad[1:3]])
        if overflows:
            evidence.append(f"{len(overflows)} step(s) skipped for gradient overflow"
                            + (f"; loss scale fell to {min(scales):g}" if scales else ""))
        if bad:
            if first.kind == "loss_scale_collapsed":
                title = f"Loss scaling gave up: gradients stayed non-finite{at}"
            elif first.kind == "nonfinite_detected":
                function = first.fields.get("function")
                title = (f"{function} produced NaN in the backward pass{at}" if function
                         else f"NaN/Inf detected in training{at}")
            else:
                key = first.fields.get("key", "loss")
                what = "The loss" if "loss" in key.lower() else f"The gradient norm ({key})"
                title = f"{what} became {first.fields.get('value', 'NaN')}{at}"
            severity, confidence = Severity.ERROR, 0.9
        elif collapsed:
            title = f"Gradients keep overflowing: the loss scale fell to {min(scales):g}"
            severity, confidence = Severity.ERROR, 0.8
        else:
            title = f"Gradients overflowed {len(overflows)} times (steps skipped)"
            severity, confidence = Severity.WARNING, 0.6
        rank = first.number("rank")
        yield Finding(
            id=self.id, category=self.category, severity=severity, confidence=confidence,
            title=title,
            explanation=(
                ("Training diverged: the loss grew for several logged steps before it became "
                 "non-finite, which points at the optimisation (learning rate too high, no "
                 "gradient clipping) rather than one bad batch. " if diverged else
                 "The first non-finite value is where to look: that batch, or an operation "
                 "that overflowed (fp16) or divided by zero. " if bad else "")
                + "Once a NaN or Inf reaches the weights every later step is garbage; in a "
                "distributed job ranks can also desynchronise and stall."),
            culprit=Culprit(rank=rank, role="rank") if rank is not None else None,
            evidence=tuple(evidence[:_MAX_EVIDENCE]),
            fixes=_DIVERGED_FIXES if diverged or not bad else _SUDDEN_NAN_FIXES,
        )


def _is_number(value: str | None) -> bool:
    try:
        float(value or "")
    except ValueError:
        return False
    return True


def _finite_losses_before(lines: tuple[str, ...], index: int, lookback: int = 200,
                          keep: int = 10) -> list[tuple[float, str]]:
    """The last `keep` finite losses logged before line `index`, oldest first."""
    found: list[tuple[float, str]] = []
    for position in range(index - 1, max(-1, index - lookback - 1), -1):
        if match := _FINITE_LOSS.search(lines[position]):
            found.append((float(match[1]), lines[position].strip()))
            if len(found) >= keep:
                break
    return found[::-1]


_CLIP = ("Clip gradients: `torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)` before "
         "`optimizer.step()`.")
_LR = "Lower the learning rate or lengthen warm-up."
_ANOMALY = ("Find the operation: run the failing step with "
            "`torch.autograd.set_detect_anomaly(True)` (slow: only while debugging), and check "
            "that batch's inputs and labels with `torch.isfinite(x).all()`.")
_PRECISION = ("In mixed precision prefer bf16 (`torch.autocast('cuda', dtype=torch.bfloat16)`) "
              "or keep a GradScaler with fp16; look for log(0), division by zero, sqrt or pow of "
              "negatives in the loss.")
_RESUME = "Resume from the last checkpoint before the failure (skipping the bad batch)."
_DIVERGED_FIXES = (_LR, _CLIP, _PRECISION, _RESUME)
_SUDDEN_NAN_FIXES = (_ANOMALY, _PRECISION, _CLIP, _RESUME)

"""HD351 distributed.network: The connection between ranks failed: gloo or NCCL socket errors,
InfiniBand completion errors, the TCPStore losing its connection. When a rank died first, the
broken connection is its consequence and the network is probably fine."""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass, field

from hangdoctor.analysis.job import JobView
from hangdoctor.analysis.logs import LogKind, LogMatch, RankFailure, torchrun_failures
from hangdoctor.analysis.tracebacks import Raised, first_failure
from hangdoctor.i18n import _
from hangdoctor.rules._log_rule import LogKindsRule
from hangdoctor.rules.confidence import Confidence
from hangdoctor.rules.distributed._logs import capital, exit_text, rank_name
from hangdoctor.rules.finding import Culprit, Finding, Severity
from hangdoctor.rules.log_helpers import MAX_EVIDENCE, cite, clip, matches_of, output_lines
from hangdoctor.taxonomy import Category

_PEER = re.compile(r"\[?((?:\d{1,3}\.){3}\d{1,3}|[0-9a-fA-F:]*:[0-9a-fA-F:]+)\]?[:<](\d+)")


class TransportFailure(LogKindsRule):
    """the transport between ranks failed

    Fires when: gloo or NCCL connections closed, reset or refused, InfiniBand completion errors, the
    TCPStore lost; says when a peer died first

    Why: Ranks exchange tensors over sockets, NVLink or InfiniBand; a connection that is closed,
    reset or refused, or an InfiniBand completion error, fails the collective on every rank that
    used it. When a rank died first, the broken connection is only its consequence and the network
    is probably fine.

    Instead: If a rank died first, fix its own error (the first traceback or signal in the log,
    `dmesg` for the OOM killer); otherwise pin the interface that connects the nodes
    (`NCCL_SOCKET_IFNAME=<iface>`, `GLOO_SOCKET_IFNAME`), check InfiniBand ports (`ibstat`), and
    open all ports between the nodes (NCCL and gloo use random ports, not only MASTER_PORT).
    """

    id = "HD351"
    category = Category.DISTRIBUTED_NETWORK
    specificity = 50
    kinds = (LogKind.TRANSPORT_ERROR,)

    def explain(self, job: JobView, errors: list[LogMatch]) -> Iterable[Finding]:
        lines = output_lines(job)
        first = errors[0]
        failures = torchrun_failures(lines)
        oom = matches_of(job, LogKind.OOM_KILLED, kernel=True)
        earlier = [f for f in failures if 0 <= f.index < first.index]
        violent = [f for f in failures if f.signal not in (None, 6, 15)]
        dead = (earlier or violent)[0] if (earlier or violent) else None
        own = first_failure(lines)  # a rank's own exception (not a lost peer) before it
        raised_first = own if own is not None and own.index < first.index else None
        told = _broken_connection(first)
        told.evidence = cite(errors, limit=4)
        if dead is None and raised_first is not None:
            _peer_raised_first(told, raised_first)
        elif dead is not None:
            _peer_died_first(told, dead, before_the_error=dead in earlier)
        elif oom:
            _peer_oom_killed(told, oom)
        yield self.finding(
            severity=told.severity,
            confidence=told.confidence,
            title=told.title,
            explanation=told.explanation,
            # The rank that reports a broken connection is its victim; only a peer that died
            # first is worth pointing at.
            culprit=(
                Culprit(rank=dead.rank, pid=dead.pid, role="rank")
                if dead
                else Culprit(rank=raised_first.rank, role="rank")
                if raised_first
                else None
            ),
            evidence=tuple(told.evidence[:MAX_EVIDENCE]),
            fixes=_fixes(),
        )


@dataclass
class _Told:
    """What the finding says: the broken connection, then what a peer did before it."""

    title: str
    explanation: str
    evidence: list[str] = field(default_factory=list)
    severity: Severity = Severity.ERROR
    confidence: Confidence = Confidence.LIKELY


def _broken_connection(first: LogMatch) -> _Told:
    """Which transport lost which peer, from the first connection error."""
    transport = (
        "gloo"
        if "gloo/" in first.line
        else _("the TCPStore")
        if "DistNetworkError" in first.line
        else "NCCL"
    )
    peer = _PEER.search(first.detail or first.line)
    address = f"{peer[1]}:{peer[2]}" if peer else ""
    title = (
        _(
            "Connection between ranks failed ({transport} with {peer})",
            transport=transport,
            peer=address,
        )
        if peer
        else _("Connection between ranks failed ({transport})", transport=transport)
    )
    explanation = _(
        "{transport} lost a connection to a peer: {line}",
        transport=capital(transport),
        line=clip(first.detail or first.line),
    )
    return _Told(title=title, explanation=explanation)


def _peer_raised_first(told: _Told, raised: Raised) -> None:
    """A rank raised an exception of its own before the first connection error."""
    told.title = _("{title}: a peer probably failed first", title=told.title)
    told.explanation = _(
        "{explanation}. Rank {rank} raised {type} "
        "before the first connection error: its process ended and its "
        "connections broke with it, so the network is probably fine.",
        explanation=told.explanation,
        rank=raised.rank,
        type=raised.short_type,
    )
    told.evidence.append(
        _(
            "log: rank {rank} raised {type}: {message}",
            rank=raised.rank,
            type=raised.short_type,
            message=clip(raised.message),
        )
    )
    told.confidence, told.severity = Confidence.EVEN, Severity.WARNING


def _peer_died_first(told: _Told, dead: RankFailure, *, before_the_error: bool) -> None:
    """A rank was killed (or exited) before the connection error, or was killed at all."""
    name = rank_name(dead)
    died = {"explanation": told.explanation, "name": capital(name), "exit": exit_text(dead)}
    if dead.signal is not None:
        told.explanation = (
            _(
                "{explanation}. {name} was {exit} before the first connection "
                "error: a peer probably died first and its connections broke with "
                "it, so the network is probably fine.",
                **died,
            )
            if before_the_error
            else _(
                "{explanation}. {name} was {exit}: a peer probably died first and "
                "its connections broke with it, so the network is probably fine.",
                **died,
            )
        )
    else:
        told.explanation = (
            _(
                "{explanation}. {name} exited ({exit}) before the first connection "
                "error: a peer probably died first and its connections broke with "
                "it, so the network is probably fine.",
                **died,
            )
            if before_the_error
            else _(
                "{explanation}. {name} exited ({exit}): a peer probably died first "
                "and its connections broke with it, so the network is probably fine.",
                **died,
            )
        )
    told.evidence.append(
        _("log: {line}", line=clip(dead.line))
        if dead.line
        else f"torchrun: {name} {exit_text(dead)}"
    )
    _a_peer_died(told)


def _peer_oom_killed(told: _Told, oom: list[LogMatch]) -> None:
    """The kernel's OOM killer ended a process of the job."""
    told.explanation = _(
        "{explanation}. The kernel's OOM killer ended a process: a peer probably "
        "died first and its connections broke with it.",
        explanation=told.explanation,
    )
    told.evidence += cite(oom, "kernel log", limit=1)
    _a_peer_died(told)


def _a_peer_died(told: _Told) -> None:
    told.title = _("{title}: a peer probably died first", title=told.title)
    told.severity, told.confidence = Severity.WARNING, Confidence.EVEN


def _fixes() -> tuple[str, ...]:
    return (
        _(
            "If a rank died first, read its own error (the first traceback or signal in "
            "the log, `dmesg` for the OOM killer): that is the root cause."
        ),
        _(
            "Otherwise rerun with NCCL_DEBUG=INFO NCCL_DEBUG_SUBSYS=INIT,NET to see which "
            "interface and transport each rank uses, and pin the one that connects the "
            "nodes with NCCL_SOCKET_IFNAME=<iface> (GLOO_SOCKET_IFNAME for gloo)."
        ),
        _(
            "On InfiniBand, check the ports (`ibstat`, `ibv_devinfo`) and try "
            "NCCL_IB_DISABLE=1 to tell an IB fault from a software one."
        ),
        _(
            "Check that firewalls allow all ports between the nodes (NCCL and gloo open "
            "random ports, not only MASTER_PORT)."
        ),
    )

"""HD353 distributed.rendezvous: The job never got all its ranks together: the store could not be
reached, or not every worker joined before the timeout."""

from __future__ import annotations

from collections.abc import Iterable

from hangdoctor.analysis.job import JobView
from hangdoctor.analysis.logs import LogKind, LogMatch
from hangdoctor.i18n import _
from hangdoctor.rules._log_rule import LogKindsRule
from hangdoctor.rules.confidence import Confidence
from hangdoctor.rules.finding import Finding
from hangdoctor.rules.log_helpers import cite
from hangdoctor.taxonomy import Category


class RendezvousFailed(LogKindsRule):
    """ranks could not rendezvous

    Fires when: the store could not be reached, or not every worker joined
    (`RendezvousTimeoutError`, store-based barrier, TCPStore timeouts)

    Why: The process group needs every worker to reach its store (MASTER_ADDR:MASTER_PORT, or
    torchrun's rendezvous endpoint) before training starts. A node that did not start or crashed at
    start-up, a wrong world size, an unreachable address, a firewall, or a port still held by a
    previous run leaves the others waiting until the rendezvous times out.

    Instead: Start every node with the same command and world size; test the endpoint from each
    worker (`nc -zv MASTER_ADDR MASTER_PORT`), with MASTER_ADDR an address the other nodes can reach
    (not localhost); pick a free MASTER_PORT; pin the interface with
    `NCCL_SOCKET_IFNAME`/`GLOO_SOCKET_IFNAME` on nodes with several.
    """

    id = "HD353"
    category = Category.DISTRIBUTED_RENDEZVOUS
    specificity = 70
    kinds = (
        LogKind.RENDEZVOUS_ERROR,
        LogKind.STORE_CONNECT_TIMEOUT,
        LogKind.STORE_BARRIER_TIMEOUT,
        LogKind.STORE_CLIENTS_TIMEOUT,
        LogKind.STORE_CONNECT_FAILED,
    )

    def explain(self, job: JobView, found: list[LogMatch]) -> Iterable[Finding]:
        strong = [m for m in found if m.kind != LogKind.STORE_CONNECT_FAILED]
        retries = [m for m in found if m.kind == LogKind.STORE_CONNECT_FAILED]
        if not strong and len(retries) < 3:
            return
        joined = next(
            (
                m
                for m in found
                if m.kind in (LogKind.STORE_BARRIER_TIMEOUT, LogKind.STORE_CLIENTS_TIMEOUT)
            ),
            None,
        )
        connect = next((m for m in found if m.kind == LogKind.STORE_CONNECT_TIMEOUT), None)
        if joined is not None:
            title = _(
                "Rendezvous failed: only {joined} of {world} workers joined",
                joined=joined.fields["joined"],
                world=joined.fields["world"],
            )
            explanation = _(
                "The process group waited for all its workers and some never came: "
                "a node that did not start (or crashed at start-up), a wrong world "
                "size, or workers that cannot reach the store."
            )
        elif connect is not None:
            address = (
                f"{connect.fields['host']}:{connect.fields['port']}"
                if "host" in connect.fields
                else connect.fields.get("address", "?")
            )
            title = _("Rendezvous failed: could not reach the store at {address}", address=address)
            explanation = _(
                "This worker tried for {after} to connect to the "
                "rendezvous store at {address} (MASTER_ADDR:MASTER_PORT or "
                "--rdzv_endpoint) and never got through: the store's host did not "
                "start it, the address is wrong or not reachable from here, or a "
                "firewall blocks the port.",
                after=connect.fields["after"],
                address=address,
            )
        else:
            first = (strong or retries)[0]
            title = _(
                "Rendezvous failed ({error})",
                error=first.fields["error"] if "error" in first.fields else _("store connection"),
            )
            explanation = _(
                "torchrun's rendezvous did not complete: not every node joined in "
                "time, or the rendezvous endpoint could not be reached."
            )
        yield self.finding(
            confidence=Confidence.STRONG,
            title=title,
            explanation=explanation,
            evidence=tuple(cite(strong + retries)),
            fixes=(
                _(
                    "Check that every node started, and runs the same command with the same "
                    "--nnodes, --nproc_per_node and world size (a node that crashed or was never "
                    "scheduled leaves the others waiting)."
                ),
                _(
                    "From each worker, test the endpoint: `nc -zv MASTER_ADDR MASTER_PORT`; "
                    "MASTER_ADDR must be an address the other nodes can reach (not localhost), "
                    "and the port must be open in the firewall or security group."
                ),
                _(
                    "A port still held by a previous run makes the store fail to start: pick "
                    "another MASTER_PORT or end the leftover processes."
                ),
                _(
                    "Pin the network interface with NCCL_SOCKET_IFNAME / GLOO_SOCKET_IFNAME when "
                    "the nodes have several."
                ),
            ),
        )

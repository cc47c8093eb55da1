"""HD315 distributed.collective_timeout: every rank on this node waits in the same collective
for ranks that run on other nodes. From here the cause cannot be seen; says which ranks and
where to look next."""

from __future__ import annotations

from collections.abc import Iterable

from hangdoctor.analysis.advice import process_group_timeout
from hangdoctor.analysis.job import JobView
from hangdoctor.analysis.rank_sets import spans_text
from hangdoctor.analysis.ranks import rank_view
from hangdoctor.evidence.model import NodeClass, NodeSeen, NodesEvidence
from hangdoctor.i18n import _, _n
from hangdoctor.rules.base import Rule
from hangdoctor.rules.confidence import Confidence
from hangdoctor.rules.distributed._ranks import describe_group, rank_culprit
from hangdoctor.rules.finding import Finding
from hangdoctor.taxonomy import Category


def _span(ranks: list[int]) -> str:
    return (
        f"{ranks[0]}-{ranks[-1]}"
        if ranks == list(range(ranks[0], ranks[-1] + 1))
        else (", ".join(map(str, ranks[:8])) + (" ..." if len(ranks) > 8 else ""))
    )


def _absent_nodes(nodes: NodesEvidence, ranks: list[int]) -> str:
    """`node 2 (gpu-2), whose hangdoctor stopped answering 40 s ago`: the nodes of the job that
    hold `ranks` and are not in the merged view, as far as the session knows them."""
    absent = [n for n in nodes.nodes if not n.answered]
    holding = [n for n in absent if set(n.ranks) & set(ranks)] or [n for n in absent if not n.ranks]
    words = [
        _("nodes {nodes} ({count}), {why}", nodes=spans_text(c.nodes), count=c.count, why=_why(c))
        for c in nodes.classes
        if not c.answered
    ][:4]
    if not holding and not words:
        return _("nodes not in this view")
    for n in holding[:4]:
        host = f" ({n.host})" if n.host and n.host != n.node else ""
        words.append(_("node {node}{host}, {why}", node=n.node, host=host, why=_why(n)))
    return "; ".join(words)


def _why(n: NodeSeen | NodeClass) -> str:
    """Why a node (or a class of alike nodes) is not in the view."""
    if not n.joined:
        return _("whose hangdoctor never joined")
    if n.silent_s is not None and n.silent_s >= 6:
        return _("whose hangdoctor stopped answering {seconds:.0f} s ago", seconds=n.silent_s)
    return _("which sent no evidence in time")


class RemoteRanks(Rule):
    """this node's ranks wait in a collective for ranks on other nodes

    Fires when: every rank on this node waits in the same collective and the ranks missing here
    belong to other nodes (torchrun's GROUP_RANK and LOCAL_WORLD_SIZE): names them and what to check
    there

    Why: When every rank on this node waits in the same collective and the ranks that have not
    joined it run on other nodes, the cause is on those nodes: a rank stuck or slow outside the
    collective, a rank that died, or the network between the nodes. Looking only at this node's
    ranks finds only victims.

    Instead: Capture the other nodes too (`hangdoctor dump PID` of torchrun there, or run one
    `hangdoctor run` per node so they merge their evidence); check their logs for a failed rank and
    the network between nodes (`NCCL_DEBUG=INFO`, `NCCL_SOCKET_IFNAME`).
    """

    id = "HD315"
    category = Category.DISTRIBUTED_COLLECTIVE_TIMEOUT
    reads = "ranks"
    specificity = 40

    def check(self, job: JobView) -> Iterable[Finding]:
        view = rank_view(job)
        node = view.on_this_node
        alive = view.alive
        if node is None or not view.elsewhere or not alive:
            return
        if not all(s.in_collective for s in alive.distinct()):
            return  # not every rank here waits in a collective: not what this rule matches
        if len({(s.call, s.seq) for s in alive.distinct()}) != 1:
            return
        remote = _span(view.elsewhere)
        here = f"{node.start}-{node.stop - 1}"
        where_words, nodes_words = _("this node"), _("run on other nodes")
        nodes = job.bundle.nodes
        if nodes is not None:  # a view merged from several nodes: the missing ones are named
            here = spans_text(alive.spans())
            count = nodes.answered
            where_words = _n(
                "the {count} node in this view", "the {count} nodes in this view", count
            )
            nodes_words = _("run on {nodes}", nodes=_absent_nodes(nodes, view.elsewhere))
        yield self.finding(
            confidence=Confidence.POSSIBLE,
            title=_(
                "Ranks {here} ({where}) wait in {call} for ranks {remote}, which {nodes}",
                here=here,
                where=where_words,
                call=alive[0].call,
                remote=remote,
                nodes=nodes_words,
            ),
            explanation=_(
                "Every rank on this node is in the same collective, waiting for its "
                "peers; the ones that have not joined it run on other nodes, so the "
                "cause is there: a rank stuck or slow outside the collective, a rank "
                "that died, or a network problem between the nodes."
            ),
            culprit=rank_culprit(job, alive[0]),
            related=tuple(rank_culprit(job, s) for s in alive[1:4]),
            evidence=(
                describe_group(alive),
                _(
                    "WORLD_SIZE is {world_size}; this node runs ranks {here} "
                    "(GROUP_RANK x LOCAL_WORLD_SIZE), ranks {remote} are not here",
                    world_size=view.world_size,
                    here=here,
                    remote=remote,
                ),
            ),
            fixes=(
                _(
                    "Run `hangdoctor dump PID` on the nodes of ranks {remote} (the PID of "
                    "torchrun there): the rank that is not in this collective is the culprit.",
                    remote=remote,
                ),
                _(
                    "Check those nodes' logs for a rank that failed, and the network between the "
                    "nodes (NCCL_DEBUG=INFO, NCCL_SOCKET_IFNAME)."
                ),
                process_group_timeout(job),
            ),
        )

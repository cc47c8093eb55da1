"""The job-wide session at scale (issue 28): 1,024 node agents on one machine, each the real
session code (`nodes.session.NodeSession`, `nodes.exchange.TreeExchange`) on a real c10d
TCPStore, as 1,024 `hangdoctor run`s of a job of 8,192 ranks would be.

The agents run as threads in a few processes (a process each would need 1,024 interpreters
with torch). One agent declares a hang; every agent hears of it through the store, "captures"
(a synthetic node of 8 ranks, reduced to its classes as a node does), and exchanges it up the
merge tree until it holds the whole job's view. Measured:
- when each agent captured (its supervisor's tick after its session heard), against the
  first: target <= 1 s;
- when each agent held the whole job's view, against the declaration: target <= 5 s;
- the store's traffic (requests and bytes, each agent's board counting its own), in the steady
  state (beats and polls, per second) and for the exchange;
- the memory an agent adds to its process (resident set, per agent).

On this machine the agents share 2 cores, where a real job gives each its own node: the times
include that contention (every agent unpacks the job's view on the same 2 cores).

    python benchmarks/bench_session.py [--agents 1024] [--processes 16]
"""

from __future__ import annotations

import argparse
import multiprocessing
import os
import socket
import statistics
import sys
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

RANKS_PER_NODE = 8
STEADY_S = 5.0  # how long the steady state is measured before the hang
#: How often an agent asks its session for a peer's hang: the supervisor's tick
#: (`supervise.watch_loop.TICK_S`); 1,024 threads asking every 0.05 s took a share of 2 cores.
TICK_S = 0.2


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


def _rss_bytes() -> int:
    with open(f"/proc/{os.getpid()}/statm") as handle:
        return int(handle.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")


@dataclass
class _Traffic:
    requests: int = 0
    sent: int = 0
    received: int = 0
    lock: threading.Lock = field(default_factory=threading.Lock)

    def add(self, requests: int, sent: int = 0, received: int = 0) -> None:
        with self.lock:
            self.requests += requests
            self.sent += sent
            self.received += received


def _counting_board(port: int, traffic: _Traffic) -> Any:
    from hangdoctor.nodes.board import StoreBoard

    class CountingBoard(StoreBoard):
        def put(self, key: str, value: bytes) -> None:
            traffic.add(1, sent=len(key) + len(value))
            super().put(key, value)

        def get(self, key: str) -> bytes | None:
            value = super().get(key)
            traffic.add(1, received=len(value or b""))  # one request, present or not
            return value

        def compare_set(self, key: str, expected: str, desired: str) -> str:
            traffic.add(1)
            return super().compare_set(key, expected, desired)

        def add(self, key: str, amount: int) -> int:
            traffic.add(1)
            return super().add(key, amount)

        def members(self) -> list[str]:
            found = super().members()
            traffic.add(1)  # the count; each new member's read counted by get
            return found

    return CountingBoard("127.0.0.1", port, "sim")


def _agents(
    first: int, count: int, total: int, port: int, declarer: int, queue: Any, go: Any
) -> None:
    """One process of agents: connect them all, say so, wait for the go, run the hang."""
    from bench_nodes import synthetic_node

    from hangdoctor.nodes.classes import reduce_to_classes
    from hangdoctor.nodes.session import NodeSession, SessionPlan

    straggler = total * RANKS_PER_NODE // 3
    # What py-spy and /proc would read on each node, made before the hang (and before the
    # memory is measured): on 2 cores, making 1,024 synthetic bundles at the hang (about a
    # millisecond each) was itself much of the captures' spread, work a node does on its own.
    read = {node: synthetic_node(node, straggler) for node in range(first, first + count)}
    baseline = _rss_bytes()
    traffic = _Traffic()
    sessions = []
    for node in range(first, first + count):
        plan = SessionPlan(
            str(node),
            f"gpu{node:05d}",
            total,
            "simulated TCPStore",
            lambda: _counting_board(port, traffic),
        )
        ranks = tuple(range(node * RANKS_PER_NODE, (node + 1) * RANKS_PER_NODE))
        sessions.append(NodeSession(plan, lambda ranks=ranks: ranks))
    for session in sessions:  # one at a time: a node connects from its own machine
        session.start()
        while not session.connected:
            time.sleep(0.01)
    queue.put(("connected", first, _rss_bytes() - baseline))
    go.wait()
    steady_from = traffic.requests
    time.sleep(STEADY_S)
    steady = (traffic.requests - steady_from) / STEADY_S
    exchange_from = (traffic.requests, traffic.sent, traffic.received)
    results: dict[int, tuple[float, float, int]] = {}

    def run(session: NodeSession) -> None:
        node = int(session.plan.me)
        if node == declarer:
            epoch = session.declare()
            queue.put(("declared", node, time.time()))
        else:
            epoch = None
            while epoch is None:
                epoch = session.peer_hang()
                if epoch is None:
                    time.sleep(TICK_S)  # as often as the supervisor's loop asks
            session.took(epoch)
        captured = time.time()
        capture = reduce_to_classes(read[node])  # what the node sends is reduced here
        view = session.whole_job(epoch, capture)
        answered = view.nodes.answered if view.nodes else 0  # node classes counted
        results[node] = (captured, time.time(), answered)

    threads = [threading.Thread(target=run, args=(s,)) for s in sessions]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(120)
    used = (
        traffic.requests - exchange_from[0],
        traffic.sent - exchange_from[1],
        traffic.received - exchange_from[2],
    )
    queue.put(("done", first, results, steady, used, _rss_bytes() - baseline))
    for session in sessions:
        session.stop()


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--agents", type=int, default=1024)
    parser.add_argument("--processes", type=int, default=16)
    args = parser.parse_args()
    from hangdoctor.nodes.board import StoreBoard

    # A client's connection now and then waits out c10d's connect retry (5 s here) and logs it:
    # the agents retry, as a node does; the log would bury the figures.
    os.environ.setdefault("TORCH_CPP_LOG_LEVEL", "FATAL")
    port = _free_port()
    store = StoreBoard("127.0.0.1", port, "sim", serve=True)
    context = multiprocessing.get_context("spawn")
    queue = context.Queue()
    go = context.Event()
    per = args.agents // args.processes
    declarer = args.agents // 2 + 1  # not node 0: the hang comes from the middle of the job
    started = time.monotonic()
    workers = [
        context.Process(target=_agents, args=(i * per, per, args.agents, port, declarer, queue, go))
        for i in range(args.processes)
    ]
    for worker in workers:
        worker.start()
    connected_rss = []
    for _ in workers:
        kind, _first, rss = queue.get(timeout=600)
        assert kind == "connected"
        connected_rss.append(rss)
    joined_s = time.monotonic() - started
    go.set()
    declared_at = None
    results: dict[int, tuple[float, float, int]] = {}
    steady, used, rss_after = [], [], []
    while len(steady) < len(workers):
        message = queue.get(timeout=600)
        if message[0] == "declared":
            declared_at = message[2]
        elif message[0] == "done":
            results |= message[2]
            steady.append(message[3])
            used.append(message[4])
            rss_after.append(message[5])
    for worker in workers:
        worker.join(30)
    store.close()
    assert declared_at is not None
    first_capture = min(r[0] for r in results.values())
    spread = [r[0] - first_capture for r in results.values()]
    held = [r[1] - declared_at for r in results.values()]
    whole = sum(1 for r in results.values() if r[2] == args.agents)
    requests = sum(u[0] for u in used)
    print(f"{args.agents} agents in {args.processes} processes, all joined in {joined_s:.1f} s")
    print()
    print("| measure | value | target |")
    print("| --- | ---: | --- |")
    print(f"| agents that finished the exchange | {len(results)} of {args.agents} | all |")
    print(f"| agents holding all {args.agents} nodes' evidence | {whole} of {args.agents} | all |")
    print(
        f"| capture after the first: median / max s | {statistics.median(spread):.2f} / "
        f"{max(spread):.2f} | <= 1 s: {'met' if max(spread) <= 1 else 'missed'} |"
    )
    print(
        f"| whole view after the declaration: median / max s | {statistics.median(held):.2f}"
        f" / {max(held):.2f} | <= 5 s: {'met' if max(held) <= 5 else 'missed'} |"
    )
    print(f"| store requests per second, steady (beats, polls) | {sum(steady):,.0f} |  |")
    print(
        f"| store requests for the exchange | {requests:,} ({requests / args.agents:.0f} an "
        "agent) |  |"
    )
    print(
        f"| bytes sent / received for the exchange | {sum(u[1] for u in used):,} / "
        f"{sum(u[2] for u in used):,} |  |"
    )
    print(
        f"| memory an agent adds, joined / after the exchange (RSS) | "
        f"{statistics.median(connected_rss) / per / 1e6:.2f} MB / "
        f"{statistics.median(rss_after) / per / 1e6:.2f} MB |  |"
    )
    ok = len(results) == args.agents and whole == args.agents
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())

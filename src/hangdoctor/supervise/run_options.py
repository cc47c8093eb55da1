"""What `hangdoctor run` was asked to do, once its options are checked (`hangdoctor.options`
defines each one shared with `watch()`: its name, range, variable and default)."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path


@dataclass(frozen=True)
class RunOptions:
    """What `hangdoctor run` was asked to do."""

    command: tuple[str, ...]
    report_dir: Path
    hang_timeout_s: float | None = None  # None: adaptive (supervise.policy)
    on_hang: str = "report"  # or "kill"
    instrument: bool = True
    kill_grace_s: float = 10.0
    native_stacks: bool = False
    prove: bool = True  # declare an idle hang as soon as its stacks prove it (analysis.proof)
    compile_budget_s: float | None = None  # default: HangPolicy.compile_factor x the timeout
    coordinator: tuple[str, int] | None = None  # `--coordinator`: where the nodes meet
    join_nodes: bool = True  # a job of several nodes: meet the other nodes' hangdoctor
    metrics_port: int = 0  # serve Prometheus metrics on it (supervise.metrics); 0: off
    metrics_addr: str = "127.0.0.1"

"""Which node of a multi-node job this is: its rank among the nodes, how many there are, the
job's id and the host and port the nodes meet at. Pure: read from the job's command and the
environment, in this order, the first that says wins for each field:

1. torchrun's own options in the job's command (`--nnodes 2` or `1:4`, `--node-rank`,
   `--rdzv-endpoint`, `--rdzv-id`, `--master-addr`, `--master-port`, `--standalone`);
2. torchrun's `PET_*` variables (what torchrun reads for those options; the Kubeflow training
   operator sets them in a PyTorchJob with an elastic policy and in a TrainJob);
3. `MASTER_ADDR`, `MASTER_PORT`, `NODE_RANK`, and the training operator's per-pod `RANK` and
   `WORLD_SIZE` (one pod a node; not read as node counts under Slurm, where a script's own
   `WORLD_SIZE` counts processes);
4. Slurm's `SLURM_NODEID`, `SLURM_NNODES`/`SLURM_JOB_NUM_NODES`, `SLURM_JOB_ID`,
   `SLURM_PROCID`, and the first host of `SLURM_STEP_NODELIST`/`SLURM_JOB_NODELIST`, which is
   the coordinator when nothing else names one.
"""

from __future__ import annotations

import os
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

#: torchrun's default ports: the c10d rendezvous endpoint's, and the static master's.
RDZV_PORT = 29400
MASTER_PORT = 29500

# torchrun options that take no value; every other option does (unless written `--opt=value`).
_FLAGS = {"--standalone", "--no-python", "--run-path", "-m", "--module", "--use-env"}
_LAUNCHER_MODULES = {"torch.distributed.run", "torch.distributed.launch"}


@dataclass(frozen=True)
class NodeIdentity:
    """This node in its job; None where nothing said."""

    host: str
    node_rank: int | None
    nnodes: int | None
    job_id: str | None
    coordinator: tuple[str, int] | None
    source: str  # what decided: `torchrun`, `torchrun-env`, `operator`, `slurm`, joined by `+`


def _number(value: str | None) -> int | None:
    value = (value or "").strip()
    return int(value) if value.isdigit() else None


def _nodes(value: str | None) -> int | None:
    """`2`, or the most nodes of an elastic `1:4`."""
    parts = (value or "").strip().split(":")
    numbers = [_number(p) for p in parts]
    return max(n for n in numbers if n is not None) if all(n is not None for n in numbers) else None


def _endpoint(value: str | None, default_port: int) -> tuple[str, int] | None:
    """`host`, `host:port` or `[v6]:port`."""
    value = (value or "").strip()
    found = re.fullmatch(
        r"\[(?P<v6>[^\]]+)\](?::(?P<p6>\d+))?|(?P<host>[^:\[\]]+)(?::(?P<port>\d+))?", value
    )
    if not found:
        return None
    port = found["p6"] or found["port"]
    return (found["v6"] or found["host"], int(port) if port else default_port)


def first_host(nodelist: str | None) -> str | None:
    """The first host of a Slurm nodelist: `gpu[001-004,007]` is gpu001, `a[1-2]-ib[3,5],b1`
    is a1-ib3."""
    text = (nodelist or "").strip()
    depth, end = 0, len(text)
    for index, char in enumerate(text):
        depth += char == "["
        depth -= char == "]"
        if char == "," and depth == 0:
            end = index
            break
    first = re.sub(r"\[([^\],\-]*)[^\]]*\]", r"\1", text[:end])
    return first or None


def _launcher_options(argv: Sequence[str]) -> dict[str, str]:
    """torchrun's options in the job's command (names with `-`), up to the training script."""
    start = None
    for index, arg in enumerate(argv):
        name = os.path.basename(arg)
        if name == "torchrun" or (
            arg in _LAUNCHER_MODULES and index > 0 and argv[index - 1] == "-m"
        ):
            start = index + 1
            break
    if start is None:
        return {}
    options: dict[str, str] = {}
    index = start
    while index < len(argv):
        arg = argv[index]
        if not arg.startswith("-"):
            break  # the training script: what follows is its own
        name, equals, value = arg.partition("=")
        name = name.replace("_", "-") if name.startswith("--") else name
        if not equals and name not in _FLAGS and index + 1 < len(argv):
            index += 1
            value = argv[index]
        options[name] = value
        index += 1
    return options


@dataclass
class _Found:
    """The fields found so far, and where from."""

    node_rank: int | None = None
    nnodes: int | None = None
    job_id: str | None = None
    coordinator: tuple[str, int] | None = None
    sources: tuple[str, ...] = ()

    def take(self, source: str, **fields: object) -> None:
        """Fill the fields still unknown with those given; note the source if it gave any."""
        used = False
        for name, value in fields.items():
            if value is not None and getattr(self, name) is None:
                setattr(self, name, value)
                used = True
        if used and source not in self.sources:
            self.sources = (*self.sources, source)


def _coordinator(
    endpoint: str | None, addr: str | None, port: str | None
) -> tuple[str, int] | None:
    """A rendezvous endpoint, else a master address and port (torchrun's defaults)."""
    found = _endpoint(endpoint, RDZV_PORT)
    if found is None and (addr or "").strip():
        found = _endpoint(addr, _number(port) or MASTER_PORT)
    return found


def node_identity(argv: Sequence[str], env: Mapping[str, str], host: str) -> NodeIdentity:
    """This node's identity in its job, from the job's command `argv` and `env`."""
    found = _Found()
    options = _launcher_options(argv)
    standalone = "--standalone" in options
    found.take(
        "torchrun",
        nnodes=_nodes(options.get("--nnodes")) or (1 if standalone else None),
        node_rank=_number(options.get("--node-rank")) if not standalone else 0,
        job_id=options.get("--rdzv-id") or None,
        coordinator=_coordinator(
            options.get("--rdzv-endpoint"),
            options.get("--master-addr"),
            options.get("--master-port"),
        ),
    )
    found.take(
        "torchrun-env",
        nnodes=_nodes(env.get("PET_NNODES")),
        node_rank=_number(env.get("PET_NODE_RANK")),
        job_id=env.get("PET_RDZV_ID") or None,
        coordinator=_coordinator(
            env.get("PET_RDZV_ENDPOINT"), env.get("PET_MASTER_ADDR"), env.get("PET_MASTER_PORT")
        ),
    )
    slurm = bool(env.get("SLURM_JOB_ID") or env.get("SLURM_JOBID"))
    # The operator's RANK and WORLD_SIZE count pods, where no torchrun set its own.
    per_pod = not slurm and not {"LOCAL_RANK", "GROUP_RANK", "LOCAL_WORLD_SIZE"} & set(env)
    found.take(
        "operator",
        node_rank=_number(env.get("NODE_RANK"))
        if "NODE_RANK" in env
        else (_number(env.get("RANK")) if per_pod and "MASTER_ADDR" in env else None),
        nnodes=_number(env.get("WORLD_SIZE")) if per_pod and "MASTER_ADDR" in env else None,
        coordinator=_coordinator(None, env.get("MASTER_ADDR"), env.get("MASTER_PORT")),
    )
    head = first_host(env.get("SLURM_STEP_NODELIST") or env.get("SLURM_JOB_NODELIST"))
    nodes = _number(env.get("SLURM_NNODES")) or _number(env.get("SLURM_JOB_NUM_NODES"))
    one_task_a_node = nodes is not None and _number(env.get("SLURM_NTASKS")) == nodes
    found.take(
        "slurm",
        node_rank=_number(env.get("SLURM_NODEID"))
        if "SLURM_NODEID" in env
        else (_number(env.get("SLURM_PROCID")) if one_task_a_node else None),
        nnodes=nodes,
        job_id=env.get("SLURM_JOB_ID") or env.get("SLURM_JOBID") or None,
        coordinator=(head, _number(env.get("MASTER_PORT")) or MASTER_PORT) if head else None,
    )
    return NodeIdentity(
        host=host,
        node_rank=found.node_rank,
        nnodes=found.nnodes,
        job_id=found.job_id,
        coordinator=found.coordinator,
        source="+".join(found.sources) or "none",
    )

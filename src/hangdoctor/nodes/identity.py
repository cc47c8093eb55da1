"""Which node of the job this is, and where the job's store is, from what the launcher already
says: torchrun's arguments in the command, the PET_ variables the Kubeflow training operator
sets, MASTER_ADDR/MASTER_PORT/NODE_RANK, and Slurm's SLURM_* variables."""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass


@dataclass(frozen=True)
class NodeIdentity:
    host: str
    node_rank: int | None
    nnodes: int | None
    job_id: str | None
    coordinator: tuple[str, int] | None  # the job's own store (rendezvous endpoint)
    source: str  # what said so, for the report


_TORCHRUN = ("torchrun", "torch.distributed.run", "torch.distributed.launch")


def _torchrun_args(argv: Sequence[str]) -> dict[str, str]:
    """`--name value` and `--name=value` pairs after torchrun in the command, names with `_`."""
    found: dict[str, str] = {}
    start = next(
        (i for i, word in enumerate(argv) if any(word.endswith(t) for t in _TORCHRUN)), None
    )
    if start is None:
        return found
    words = list(argv[start + 1 :])
    index = 0
    while index < len(words):
        word = words[index]
        if not word.startswith("--"):
            if not word.startswith("-"):
                break  # the training script: its own arguments follow
            index += 1
            continue
        name, equals, value = word[2:].partition("=")
        if not equals and index + 1 < len(words) and not words[index + 1].startswith("-"):
            value = words[index + 1]
            index += 1
        found[name.replace("-", "_")] = value
        index += 1
    return found


def _int(text: str | None) -> int | None:
    if text is None:
        return None
    text = text.split(":")[-1].strip()  # `--nnodes 1:4`: the most it may have
    return int(text) if text.isdigit() else None


def _endpoint(text: str | None, default_port: int = 29400) -> tuple[str, int] | None:
    if not text:
        return None
    host, colon, port = text.rpartition(":")
    if not colon:
        return (text, default_port)
    return (host.strip("[]"), int(port)) if port.isdigit() and host else None


def first_host(nodelist: str) -> str | None:
    """The first host of a Slurm node list: `gpu[001-004,007],cpu1` -> `gpu001`."""
    match = re.match(r"([^,\[]+)(?:\[([^\]]+)\])?", nodelist.strip())
    if match is None:
        return None
    prefix, ranges = match.group(1), match.group(2)
    if ranges is None:
        return prefix
    first = ranges.split(",")[0].split("-")[0]
    return prefix + first


def node_identity(argv: Sequence[str], env: Mapping[str, str], host: str) -> NodeIdentity:
    """This node as its launcher describes it; fields no launcher gave are None."""
    args = _torchrun_args(argv)
    pet = {k[4:].lower(): v for k, v in env.items() if k.startswith("PET_")}
    given = {**pet, **args}  # the command's own arguments win over the operator's variables
    nnodes = _int(given.get("nnodes"))
    node_rank = _int(given.get("node_rank"))
    source = "torchrun's arguments" if args else "PET_ variables" if pet else ""
    coordinator = _endpoint(given.get("rdzv_endpoint"))
    if coordinator is None and given.get("master_addr"):
        coordinator = (given["master_addr"], _int(given.get("master_port")) or 29500)
    if coordinator is None and env.get("MASTER_ADDR") and _int(env.get("MASTER_PORT")):
        coordinator = (env["MASTER_ADDR"], int(env["MASTER_PORT"]))
    if node_rank is None and _int(env.get("NODE_RANK")) is not None:
        node_rank, source = _int(env.get("NODE_RANK")), source or "NODE_RANK"
    slurm_nodes = _int(env.get("SLURM_NNODES") or env.get("SLURM_JOB_NUM_NODES"))
    if nnodes is None and slurm_nodes is not None:
        nnodes, source = slurm_nodes, source or "Slurm"
    if node_rank is None and _int(env.get("SLURM_NODEID")) is not None:
        node_rank = _int(env.get("SLURM_NODEID"))
    job_id = env.get("SLURM_JOB_ID") or given.get("rdzv_id") or None
    return NodeIdentity(
        host=host,
        node_rank=node_rank,
        nnodes=nnodes,
        job_id=job_id,
        coordinator=coordinator,
        source=source or "nothing: one node",
    )

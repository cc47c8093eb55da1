"""Vision-language-action policy fine-tuning with FSDP2 (`fully_shard`) under torchrun, gloo
on CPU, with rank 0 reporting to an experiment tracker.

Written from https://github.com/starVLA/starVLA/pull/369 (W&B init on rank 0 hangs and the
other ranks block in the next collective until the NCCL watchdog fires): rank 0 opens its
tracker run lazily at the first logging step, with an HTTP call that has no timeout. The
tracker endpoint accepts and never answers, so rank 0 waits in the HTTP response while rank
1's next forward() waits in FSDP's parameter all-gather.
"""

import http.client
import json
import os
import socket

import torch
import torch.distributed as dist
from torch import nn
from torch.distributed.fsdp import fully_shard


class Tracker:
    def __init__(self, host: str, port: int, project: str) -> None:
        self.host, self.port, self.project, self.run_id = host, port, project, None

    def log(self, metrics: dict) -> None:
        if self.run_id is None:
            connection = http.client.HTTPConnection(self.host, self.port)
            connection.request("POST", f"/api/{self.project}/runs", body=b"{}")
            self.run_id = json.loads(connection.getresponse().read())["id"]  # HANG: tracker-init
        print(f"[tracker] {self.run_id}: {metrics}", flush=True)


class Policy(nn.Module):
    def __init__(self, obs: int = 48, hidden: int = 128, actions: int = 7) -> None:
        super().__init__()
        self.vision = nn.Sequential(nn.Linear(obs, hidden), nn.GELU())
        self.trunk = nn.Sequential(nn.Linear(hidden, hidden), nn.GELU())
        self.action_head = nn.Linear(hidden, actions)

    def forward(self, obs: torch.Tensor) -> torch.Tensor:
        return self.action_head(self.trunk(self.vision(obs)))


def main() -> None:
    dist.init_process_group("gloo")
    rank = dist.get_rank()
    tracker = None
    if rank == 0:
        endpoint = socket.create_server(("127.0.0.1", 0))  # stand-in for an unreachable tracker
        tracker = Tracker("127.0.0.1", endpoint.getsockname()[1], project="vla-finetune")
    torch.manual_seed(0)
    policy = Policy()
    fully_shard(policy.vision)
    fully_shard(policy.trunk)
    fully_shard(policy)
    optimizer = torch.optim.AdamW(policy.parameters(), lr=1e-4)
    g = torch.Generator().manual_seed(rank)
    for step in range(1, int(os.environ.get("MAX_STEPS", "200")) + 1):
        obs, expert = torch.randn(32, 48, generator=g), torch.randn(32, 7, generator=g)
        loss = nn.functional.mse_loss(policy(obs), expert)
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
        print(f"rank {rank} step {step} loss {loss.item():.4f}", flush=True)
        if tracker is not None and step % 10 == 0:
            tracker.log({"step": step, "loss": loss.item()})
    dist.destroy_process_group()


if __name__ == "__main__":
    main()

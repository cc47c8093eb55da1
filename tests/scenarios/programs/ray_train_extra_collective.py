"""Ray Train, two workers: rank 0 runs one all_reduce more than rank 1 (a metric only rank 0
logs); both then wait in collectives that never match."""
import tempfile

import ray
import torch
import torch.distributed as dist
from ray.train import RunConfig, ScalingConfig
from ray.train.torch import TorchTrainer


def train_loop(config):
    rank = dist.get_rank()
    model = torch.nn.Linear(4, 1)
    for step in range(1000):
        x = torch.randn(8, 4)
        loss = model(x).pow(2).mean()
        loss.backward()
        for p in model.parameters():
            dist.all_reduce(p.grad)  # HANG: allreduce
        if rank == 0 and step == 3:
            metric = torch.tensor([loss.item()])
            dist.all_reduce(metric)  # HANG: metric
        print("step", step, flush=True)


def main():
    ray.init(num_cpus=2, include_dashboard=False, log_to_driver=True)
    try:
        with tempfile.TemporaryDirectory() as out:
            trainer = TorchTrainer(
                train_loop,
                scaling_config=ScalingConfig(num_workers=2),
                run_config=RunConfig(storage_path=out, name="mismatch"),
            )
            trainer.fit()
    finally:
        ray.shutdown()


if __name__ == "__main__":
    main()

# case: HL102 real https://github.com/Boese0601/MagicDance/issues/55
# Launched with torchrun on 8 GPUs, the training script built its loader without any
# sampler or per-rank sharding: every GPU read the same data in every iteration.
import os

import torch
import torch.distributed as dist
from torch.nn.parallel import DistributedDataParallel
from torch.utils.data import DataLoader


def main(model, dataset, args):
    dist.init_process_group("nccl")
    local_rank = int(os.environ["LOCAL_RANK"])
    model = DistributedDataParallel(model.cuda(local_rank), device_ids=[local_rank],
                                    find_unused_parameters=True)
    train_loader = DataLoader(dataset, batch_size=args.train_batch_size,  # expect: HL102
                              num_workers=args.num_workers, pin_memory=True)
    optimizer = torch.optim.AdamW(model.parameters(), lr=args.lr)
    for step, batch in enumerate(train_loader):
        loss = model(batch).mean()
        loss.backward()
        optimizer.step()

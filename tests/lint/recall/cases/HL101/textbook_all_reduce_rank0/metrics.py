# case: HL101 textbook
import torch
import torch.distributed as dist


def report(loss):
    total = torch.tensor([loss])
    if dist.get_rank() == 0:
        dist.all_reduce(total)  # expect: HL101
        print(total.item() / dist.get_world_size())

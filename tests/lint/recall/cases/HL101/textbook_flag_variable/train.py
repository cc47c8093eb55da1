# case: HL101 textbook
# The rank condition is stored in a variable first.
import torch.distributed as dist


def evaluate(model, loader, tensor):
    first_gpu = dist.get_rank() == 0
    if first_gpu:
        dist.broadcast(tensor, src=0)  # expect: HL101

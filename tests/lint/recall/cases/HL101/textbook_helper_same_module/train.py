# case: HL101 textbook
# The collective is one helper call away.
import torch
import torch.distributed as dist


def sync_and_average(tensor):
    dist.all_reduce(tensor)
    return tensor / dist.get_world_size()


def end_of_epoch(model, rank, epoch):
    if rank == 0:
        torch.save(model.state_dict(), f"model_{epoch}.pt")
        val = sync_and_average(torch.zeros(1))  # expect: HL101
        print(val)

# case: HL101 real https://github.com/tier4/Diffusion-Planner/pull/256
# The closed-loop evaluation was called only under `if global_rank == 0:`; it reaches a
# dist.barrier() two calls down, in another module, so only rank 0 ever got there.
import torch.distributed as dist

from planner.evaluation import closed_loop_validate


def train_epoch(model, loader, optimizer, epoch, args):
    global_rank = dist.get_rank()
    for batch in loader:
        loss = model(batch)
        loss.backward()
        optimizer.step()
    if global_rank == 0:
        torch_save_checkpoint(model, args.save_dir, epoch)
        if epoch % args.save_utd == 0:
            closed_loop_validate(model, args)  # expect: HL101


def torch_save_checkpoint(model, directory, epoch):
    pass

# case: HL101 real https://github.com/deepspeedai/DeepSpeed/pull/801
# save_checkpoint is a collective (every rank writes its shard and meets a barrier); calling
# it on rank 0 only hung the job.
import deepspeed
import torch


def main(args, model, data):
    engine, optimizer, loader, _ = deepspeed.initialize(args=args, model=model,
                                                        training_data=data)
    for step, batch in enumerate(loader):
        loss = engine(batch)
        engine.backward(loss)
        engine.step()
        if step % args.save_interval == 0 and torch.distributed.get_rank() == 0:
            engine.save_checkpoint(args.save_dir, tag=f"step{step}")  # expect: HL101

# case: HL101 real https://github.com/huggingface/transformers-bloom-inference/pull/40
# After a refactor, rank 0 downloaded the weights and then called a barrier that no other
# rank called.
import torch.distributed as dist
from huggingface_hub import snapshot_download


def get_checkpoint(model_name, local_rank):
    if local_rank == 0:
        path = snapshot_download(model_name)
        dist.barrier()  # expect: HL101
        return path
    return None

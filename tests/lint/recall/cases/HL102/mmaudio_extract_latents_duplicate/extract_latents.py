# case: HL102 real https://github.com/hkchengrex/MMAudio/pull/59
# The multi-GPU latent extraction script ran the same loader on every rank, so every GPU
# extracted (and wrote) the whole dataset; the fix added a DistributedSampler.
import torch
import torch.distributed as dist
from torch.utils.data import DataLoader


@torch.inference_mode()
def extract(encoder, dataset, output_dir):
    dist.init_process_group(backend="nccl")
    rank = dist.get_rank()
    torch.cuda.set_device(rank)
    loader = DataLoader(dataset, batch_size=16, num_workers=8)  # expect: HL102
    for batch in loader:
        latents = encoder(batch["audio"].cuda())
        torch.save(latents.cpu(), f"{output_dir}/{batch['id'][0]}.pt")
    dist.barrier()

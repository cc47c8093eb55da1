# case: HL103 textbook
import torch.distributed as dist


def my_files(files):
    return files[dist.get_rank()::dist.get_world_size()]  # expect: HL103

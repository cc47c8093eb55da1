# case: HL103 textbook
# Hugging Face datasets' shard() by rank: shards differ in length by one example.
import torch.distributed as dist
from datasets import load_dataset


def load_my_shard(name):
    ds = load_dataset(name, split="train")
    return ds.shard(num_shards=dist.get_world_size(), index=dist.get_rank())  # expect: HL103

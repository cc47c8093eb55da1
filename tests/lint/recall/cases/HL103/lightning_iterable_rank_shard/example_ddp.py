# case: HL103 real https://github.com/Lightning-AI/pytorch-lightning/issues/20404
# An iterable dataset sharded by rank with islice: ranks get different numbers of batches
# and the one that finishes first waits forever at the epoch-end reduction.
import itertools

import torch.distributed as dist
from torch.utils.data import IterableDataset


class ShardedRange(IterableDataset):
    def __init__(self, n):
        self.n = n

    def __iter__(self):
        rank, world_size = dist.get_rank(), dist.get_world_size()
        return itertools.islice(range(self.n), rank, None, world_size)  # expect: HL103

# case: HL103 real https://github.com/mlcommons/storage/issues/455
# Each rank took a block of ceil(N / size) samples and the last block was clamped to N, so
# the last rank ran fewer batches and the ranks met different barriers.
import math

from torch.utils.data import Sampler


class BlockSampler(Sampler):
    def __init__(self, rank, size, num_samples):
        self.rank = rank
        samples_per_proc = int(math.ceil(num_samples / size))
        indices = list(range(num_samples))
        self.indices = indices[rank * samples_per_proc:(rank + 1) * samples_per_proc]  # expect: HL103

    def __iter__(self):
        return iter(self.indices)

    def __len__(self):
        return len(self.indices)

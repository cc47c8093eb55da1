# case: HL101 textbook
# A method on self that reaches a barrier, called under a main-process flag.
import torch.distributed as dist


class Trainer:
    def __init__(self, rank):
        self.rank = rank
        self.is_main = rank == 0

    def _synchronize(self):
        if dist.is_available() and dist.is_initialized():
            dist.barrier()

    def save(self, state, path):
        if self.is_main:
            write(state, path)
            self._synchronize()  # expect: HL101


def write(state, path):
    pass

# case: HL103 real https://github.com/argonne-lcf/dlio_benchmark/pull/339
# Sample files were dealt to ranks round-robin; with 145 files on 3 ranks one rank ran a
# step fewer per epoch and left the loop while the others waited at the barrier (also
# https://github.com/argonne-lcf/dlio_benchmark/pull/198).
from mpi4py import MPI


class FileReader:
    def __init__(self, files, batch_size):
        comm = MPI.COMM_WORLD
        self.rank = comm.Get_rank()
        self.world_size = comm.Get_size()
        self.files = files[self.rank::self.world_size]  # expect: HL103
        self.batch_size = batch_size

    def batches(self):
        for start in range(0, len(self.files) - self.batch_size + 1, self.batch_size):
            yield self.files[start:start + self.batch_size]

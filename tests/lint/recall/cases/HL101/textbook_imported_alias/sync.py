# case: HL101 textbook
# The collective imported under another name.
from torch.distributed import barrier as wait_all
from torch.distributed import get_rank


def finish():
    if get_rank() == 0:
        wait_all()  # expect: HL101

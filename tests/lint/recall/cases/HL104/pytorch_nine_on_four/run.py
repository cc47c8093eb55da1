# case: HL104 real https://github.com/pytorch/pytorch/issues/15161
# Nine samples on four GPUs: scatter made three chunks of three and the fourth GPU got no
# input at all ("forward() missing 1 required positional argument").
import torch
from torch.utils.data import DataLoader


def run(net, dataset):
    model = torch.nn.DataParallel(net, device_ids=[0, 1, 2, 3]).cuda()
    for batch in DataLoader(dataset, 9):  # expect: HL104
        model(batch.cuda())

# case: HL104 real https://github.com/Eromera/erfnet_pytorch/issues/2
# Training with DataParallel failed with "forward() missing 1 required positional argument"
# until the batch size was made divisible by the number of GPUs (reported in the thread).
import argparse
import os

import torch
from torch.utils.data import DataLoader

os.environ["CUDA_VISIBLE_DEVICES"] = "0,1,2,3"


def main(dataset, net):
    parser = argparse.ArgumentParser()
    parser.add_argument("--batch-size", type=int, default=6)
    parser.add_argument("--num-workers", type=int, default=4)
    args = parser.parse_args()
    model = torch.nn.DataParallel(net).cuda()
    loader = DataLoader(dataset, num_workers=args.num_workers,  # expect: HL104
                        batch_size=args.batch_size, shuffle=True)
    for images, labels in loader:
        model(images.cuda())

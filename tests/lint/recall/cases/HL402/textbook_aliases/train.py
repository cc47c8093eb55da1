# case: HL402 textbook
# The same breakpoint under other spellings.
from pdb import set_trace as bp

import torch


def step(model, batch):
    loss = model(batch).mean()
    if not torch.isfinite(loss):
        bp()  # expect: HL402
        __import__("pdb").set_trace()  # expect: HL402
    return loss

# case: HL302 textbook
# A GRU imported by name, the optimizer on self, and a comment that only mentions clipping.
import torch
from torch.nn import GRU


class Seq2Seq:
    def __init__(self):
        self.encoder = GRU(32, 64)
        self.optim = torch.optim.Adam(self.encoder.parameters())

    def fit(self, batches):
        for x, y in batches:
            out, _ = self.encoder(x)
            loss = torch.nn.functional.mse_loss(out, y)
            self.optim.zero_grad()
            loss.backward()  # expect: HL302
            # TODO: try torch.nn.utils.clip_grad_norm_ here
            self.optim.step()

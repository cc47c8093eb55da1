# case: HL402 real https://github.com/ademiadeniji/irm/pull/2
# A breakpoint() in the training logger, "unnecessary for training", stopped every run.
import torch


class Logger:
    def __init__(self, log_dir):
        self.log_dir = log_dir
        self.rows = []

    def log(self, key, value, step):
        if isinstance(value, torch.Tensor):
            value = value.item()
        breakpoint()  # expect: HL402
        self.rows.append((step, key, value))

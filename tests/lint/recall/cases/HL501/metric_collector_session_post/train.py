import torch

from utils import post_datapoints


def report(loss: torch.Tensor, step: int):
    post_datapoints([[f"loss,step={step} value={loss.item()}"]])

import torch

from download import download_page


def build(urls):
    pages = [download_page(u) for u in urls]
    return torch.tensor([len(p) for p in pages])

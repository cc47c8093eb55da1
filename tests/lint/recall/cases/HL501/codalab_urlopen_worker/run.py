import torch

from file_util import download_url


def fetch_and_load(url, path):
    download_url(url, path)
    return torch.load(path)

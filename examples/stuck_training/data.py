"""Training samples read over HTTP from a blob store, one request per sample."""

from __future__ import annotations

import io
import urllib.request

import torch
from torch.utils.data import Dataset


class RemoteImageDataset(Dataset):
    """Images and labels fetched from `base_url/sample/<index>`."""

    def __init__(self, base_url: str, length: int) -> None:
        self.base_url = base_url
        self.length = length

    def __len__(self) -> int:
        return self.length

    def __getitem__(self, index: int) -> tuple[torch.Tensor, int]:
        url = f"{self.base_url}/sample/{index}"
        payload = urllib.request.urlopen(url).read()  # no timeout: waits as long as the server
        image, label = torch.load(io.BytesIO(payload))
        return image, label

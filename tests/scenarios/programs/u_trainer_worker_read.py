"""A Hugging Face Trainer job whose dataset fetches its images from cloud storage on the fly,
with `dataloader_num_workers=2` to hide the latency. The storage endpoint accepts connections
but stops answering, and the fetch has no timeout: both workers wait in `recv` forever and the
Trainer waits for its next batch.

Written from https://felipehonorato.com/huggingface-dataloading-on-remote-storage-data.html
(Trainer with `dataloader_num_workers` fetching samples from remote storage: the workers "can't
get the data and they keep hanging"). Mechanism: DataLoader workers blocked in dataset code.
"""

import socket
import urllib.request

import torch
from torch.utils.data import Dataset
from transformers import Trainer, TrainingArguments, ViTConfig, ViTForImageClassification

LOCAL = 48  # images already in the local cache


class RemoteImages(Dataset):
    def __init__(self, base_url: str, size: int = 256) -> None:
        self.base_url, self.size = base_url, size
        self.cache = torch.randn(LOCAL, 3, 16, 16, generator=torch.Generator().manual_seed(0))

    def __len__(self) -> int:
        return self.size

    def __getitem__(self, index: int) -> dict:
        if index < LOCAL:
            pixels = self.cache[index]
        else:
            url = f"{self.base_url}/images/{index:06d}.raw"
            payload = urllib.request.urlopen(url).read()  # HANG: fetch
            pixels = torch.frombuffer(bytearray(payload), dtype=torch.float32).view(3, 16, 16)
        return {"pixel_values": pixels, "labels": index % 3}


def main() -> None:
    bucket = socket.socket()
    bucket.bind(("127.0.0.1", 0))
    bucket.listen(64)  # the storage endpoint: it accepts, it stopped answering
    config = ViTConfig(image_size=16, patch_size=8, num_channels=3, hidden_size=32,
                       num_hidden_layers=1, num_attention_heads=2, intermediate_size=64,
                       num_labels=3)
    args = TrainingArguments(output_dir="out", per_device_train_batch_size=8, num_train_epochs=1,
                             dataloader_num_workers=2, save_strategy="no", report_to=[],
                             use_cpu=True, disable_tqdm=True, logging_steps=2)
    dataset = RemoteImages(f"http://127.0.0.1:{bucket.getsockname()[1]}")
    Trainer(model=ViTForImageClassification(config), args=args, train_dataset=dataset).train()


if __name__ == "__main__":
    main()

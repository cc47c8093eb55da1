"""A Hugging Face Trainer job (torchrun, two processes) with a callback that sends the logged
metrics to the team's tracking server from the main process. The server accepts the connection
but never answers, and the request has no timeout: process 0 sits in the callback while
process 1 has gone on to the next step and waits for it in the gradient all-reduce.

Written from https://github.com/starVLA/starVLA/pull/369 (W&B called on the main process only,
with a slow or unreachable endpoint, left the other ranks blocked in the first collective until
the watchdog killed the run). Mechanism: one rank stuck outside any collective while its peer
waits inside one.
"""

import json
import socket
import urllib.request

import torch
from torch.utils.data import Dataset
from transformers import (
    BertConfig,
    BertForSequenceClassification,
    Trainer,
    TrainerCallback,
    TrainingArguments,
)


class Reviews(Dataset):
    def __init__(self, size: int = 512) -> None:
        generator = torch.Generator().manual_seed(0)
        self.tokens = torch.randint(0, 100, (size, 16), generator=generator)
        self.labels = torch.randint(0, 2, (size,), generator=generator)

    def __len__(self) -> int:
        return len(self.labels)

    def __getitem__(self, index: int) -> dict:
        return {"input_ids": self.tokens[index], "labels": self.labels[index]}


class TrackingCallback(TrainerCallback):
    def __init__(self, url: str) -> None:
        self.url = url

    def on_log(self, args, state, control, logs=None, **kwargs):
        if state.is_world_process_zero:
            body = json.dumps({"step": state.global_step, **(logs or {})}).encode()
            request = urllib.request.Request(f"{self.url}/api/metrics", data=body)
            urllib.request.urlopen(request).read()  # HANG: track


def main() -> None:
    tracker = socket.socket()
    tracker.bind(("127.0.0.1", 0))
    tracker.listen(8)  # the tracking server: it accepts, it never answers
    config = BertConfig(vocab_size=100, hidden_size=32, num_hidden_layers=1,
                        num_attention_heads=2, intermediate_size=64, max_position_embeddings=32)
    args = TrainingArguments(output_dir="out", per_device_train_batch_size=8, num_train_epochs=1,
                             logging_steps=5, save_strategy="no", report_to=[], use_cpu=True,
                             disable_tqdm=True)
    callback = TrackingCallback(f"http://127.0.0.1:{tracker.getsockname()[1]}")
    trainer = Trainer(model=BertForSequenceClassification(config), args=args,
                      train_dataset=Reviews(), callbacks=[callback])
    trainer.train()


if __name__ == "__main__":
    main()

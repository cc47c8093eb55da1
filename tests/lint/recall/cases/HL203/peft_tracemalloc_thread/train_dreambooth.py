# case: HL203 real https://github.com/huggingface/peft/blob/5d602fdbff04c33c1c4de55cda9d4ae1d7cb7e40/examples/lora_dreambooth/train_dreambooth.py
# Public code reviewed in the precision study (not a bug report): a memory monitor thread
# runs inside each epoch while the epoch's non-persistent workers are forked.
import threading

import psutil
from torch.utils.data import DataLoader


class TorchTracemalloc:
    def __enter__(self):
        self.peak = 0
        self.running = True
        threading.Thread(target=self.peak_monitor, daemon=True).start()
        return self

    def peak_monitor(self):
        while self.running:
            self.peak = max(self.peak, psutil.Process().memory_info().rss)

    def __exit__(self, *exc):
        self.running = False


def train(unet, dataset, epochs, collate_fn):
    loader = DataLoader(dataset, batch_size=1, shuffle=True, collate_fn=collate_fn,  # expect: HL203
                        num_workers=1)
    for _ in range(epochs):
        with TorchTracemalloc():
            for batch in loader:
                unet(batch)

"""Train a small speech-enhancement mask estimator with a background-prefetch loader.

The job wraps its torch DataLoaders in a `PrefetchLoader`: a background thread
pulls batches from the DataLoader iterator and keeps up to `prefetch` of them in
a bounded queue.Queue, so that feature extraction overlaps the training step.
Each training epoch is capped at a fixed number of steps; then a validation
epoch is run through the same PrefetchLoader.  Before starting a new epoch the
loader tears down the previous epoch's prefetch thread: it signals the thread,
drains the queue, joins the thread and finally calls `queue.join()` to make
sure every queued batch was handled.

Mechanism: the consumer side (`iter_epoch`) takes batches with `queue.get()`
but never calls `queue.task_done()`, so the queue's unfinished-task counter
only ever grows.  The first training epoch stops early (step cap) while the
prefetch thread is still alive, so the teardown path at the start of
validation runs, and `data_queue.join()` waits for a task count that can never
reach zero.  The main thread blocks forever in a condition wait, with no CPU
use and no error; the last log line is "start valid epoch 0".

From https://github.com/Rikorose/DeepFilterNet/issues/236 ("Model training
hangs during validation" -- the traceback ends in setup_data_queue ->
cleanup_pin_memory_thread; fixed by PR #245 "Call data_queue.task_done() after
data_queue.get() to prevent blocking", "a get() without a subsequent
task_done() will cause self.data_queue.join() to wait indefinitely").
"""
import queue
import threading
import time

import torch
import torch.nn as nn
from torch.utils.data import DataLoader, Dataset

N_FFT = 256
HOP = 128


class NoisySpeech(Dataset):
    """Synthetic clean/noisy pairs (harmonic 'speech' + coloured noise)."""

    def __init__(self, n_items, seconds=1.0, sr=8000, seed=0):
        self.n_items = n_items
        self.n = int(seconds * sr)
        self.sr = sr
        self.seed = seed

    def __len__(self):
        return self.n_items

    def __getitem__(self, idx):
        g = torch.Generator().manual_seed(self.seed * 7919 + idx)
        t = torch.arange(self.n) / self.sr
        f0 = 100 + 150 * torch.rand(1, generator=g)
        env = torch.sigmoid(8 * torch.sin(2 * torch.pi * 2.5 * t + 6 * torch.rand(1, generator=g)))
        clean = sum(torch.sin(2 * torch.pi * f0 * k * t) / k for k in range(1, 6)) * env * 0.3
        noise = torch.randn(self.n, generator=g)
        noise = torch.cumsum(noise, 0)
        noise = noise - noise.mean()
        noise = 0.2 * noise / (noise.abs().max() + 1e-6) + 0.05 * torch.randn(self.n, generator=g)
        noisy = clean + noise
        win = torch.hann_window(N_FFT)
        spec_noisy = torch.stft(noisy, N_FFT, HOP, window=win, return_complex=True)
        spec_clean = torch.stft(clean, N_FFT, HOP, window=win, return_complex=True)
        feat = torch.log1p(spec_noisy.abs()).T  # (frames, bins)
        irm = (spec_clean.abs() / (spec_noisy.abs() + 1e-6)).clamp(0, 1).T
        return feat, irm


class PrefetchLoader:
    """Background thread that keeps `prefetch` batches ready for the train loop."""

    def __init__(self, prefetch=4):
        self.prefetch = prefetch
        self.data_queue = None
        self.prefetch_thread = None
        self.done_event = None

    def _prefetch_loop(self, loader, data_queue, done_event):
        for batch in loader:
            while not done_event.is_set():
                try:
                    data_queue.put(batch, timeout=0.5)
                    break
                except queue.Full:
                    continue
            if done_event.is_set():
                return
        while not done_event.is_set():
            try:
                data_queue.put(StopIteration(), timeout=0.5)
                return
            except queue.Full:
                continue

    def cleanup_prefetch_thread(self):
        # Check if still running from the previous epoch
        if self.prefetch_thread is not None and self.prefetch_thread.is_alive():
            self.done_event.set()
            while True:  # empty the queue
                try:
                    _ = self.data_queue.get(timeout=2)
                except queue.Empty:
                    break
            self.prefetch_thread.join()
            self.data_queue.join()  # HANG: queue_join_waits_for_task_done
            print("prefetch cleanup done", flush=True)

    def setup_data_queue(self, loader):
        self.cleanup_prefetch_thread()
        self.done_event = threading.Event()
        self.data_queue = queue.Queue(maxsize=self.prefetch)
        self.prefetch_thread = threading.Thread(
            target=self._prefetch_loop,
            args=(loader, self.data_queue, self.done_event),
            name="PrefetchLoop",
            daemon=True,
        )
        self.prefetch_thread.start()

    def iter_epoch(self, loader):
        self.setup_data_queue(loader)
        while True:
            batch = self.data_queue.get()  # HANG: get_without_task_done
            if isinstance(batch, StopIteration):
                return
            yield batch


class MaskEstimator(nn.Module):
    def __init__(self, bins=N_FFT // 2 + 1, hidden=128):
        super().__init__()
        self.inp = nn.Linear(bins, hidden)
        self.gru = nn.GRU(hidden, hidden, batch_first=True)
        self.out = nn.Linear(hidden, bins)

    def forward(self, feat):
        h, _ = self.gru(torch.relu(self.inp(feat)))
        return torch.sigmoid(self.out(h))


def main():
    torch.manual_seed(0)
    torch.set_num_threads(1)
    train_ds = NoisySpeech(2000, seed=1)
    valid_ds = NoisySpeech(128, seed=2)
    train_loader = DataLoader(train_ds, batch_size=16, shuffle=True, num_workers=2,
                              persistent_workers=False)
    valid_loader = DataLoader(valid_ds, batch_size=32, shuffle=False, num_workers=2)
    model = MaskEstimator()
    opt = torch.optim.Adam(model.parameters(), lr=1e-3)
    crit = nn.MSELoss()
    prefetcher = PrefetchLoader(prefetch=4)
    steps_per_epoch = 40
    t0 = time.time()
    for epoch in range(3):
        print(f"start train epoch {epoch}", flush=True)
        model.train()
        for step, (feat, irm) in enumerate(prefetcher.iter_epoch(train_loader)):
            mask = model(feat)
            loss = crit(mask, irm)
            opt.zero_grad()
            loss.backward()
            opt.step()
            if step % 5 == 0:
                print(f"epoch {epoch} step {step:3d} loss {loss.item():.4f} "
                      f"({time.time() - t0:.1f}s)", flush=True)
            if step + 1 == steps_per_epoch:
                break
        print(f"start valid epoch {epoch}", flush=True)
        model.eval()
        tot, n = 0.0, 0
        with torch.no_grad():
            for feat, irm in prefetcher.iter_epoch(valid_loader):
                tot += crit(model(feat), irm).item() * feat.shape[0]
                n += feat.shape[0]
        print(f"epoch {epoch} valid loss {tot / n:.4f}", flush=True)
    print("training finished", flush=True)


if __name__ == "__main__":
    main()

"""Train a small 1-D conv speech-activity model on long synthetic recordings.

The job loads variable-length recordings (16 kHz) through a DataLoader, loudness-
normalises each one to a target RMS, and then, in the training loop, cuts every
recording that is longer than the model's context into chunks.  Chunk boundaries
are placed at the quietest 20 ms window inside a search region at the end of the
allowed chunk length, so that words are not cut in half.  Fragments shorter
than a minimum length are skipped.

Mechanism: one recording in the corpus is a dead-microphone take (all zeros).
The RMS normalisation divides by an RMS of 0, so the gain is +inf and the whole
waveform becomes 0 * inf = NaN.  In the split-point search every window energy
is NaN, `energy < min_energy` is always False, the "quietest" index stays at its
default 0, and the chunking loop sets its cursor back to 0 on every pass.  The
zero-length fragment is skipped as "too short", so the loop spins forever at
100% CPU in the main process without producing a chunk or printing anything;
the DataLoader workers sit idle with their prefetched batches.

From https://github.com/vllm-project/vllm/pull/46463 ("find_split_point returns
0 when all audio samples are NaN because NaN comparisons always evaluate to
False under IEEE 754. This causes split_audio to never advance its loop cursor,
permanently hanging the worker thread.")
"""
import math
import time

import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F
from torch.utils.data import DataLoader, Dataset

SAMPLE_RATE = 16_000
MAX_CHUNK_S = 2.0          # model context
SPLIT_SEARCH_S = 0.5       # look for a quiet point in the last 0.5 s of a chunk
ENERGY_WIN = 320           # 20 ms windows for the energy search
MIN_CHUNK_S = 0.25
TARGET_RMS = 0.1
FRAME = 160                # 10 ms label frames


class SyntheticRecordings(Dataset):
    """Speech-like bursts separated by pauses, with frame-level activity labels."""

    def __init__(self, n_items=96, seed=0, dead_takes=(41,)):
        self.n_items = n_items
        self.seed = seed
        self.dead_takes = set(dead_takes)

    def __len__(self):
        return self.n_items

    def _render(self, idx):
        rng = np.random.default_rng(self.seed * 100_003 + idx)
        dur = rng.uniform(3.0, 7.0)
        n = int(dur * SAMPLE_RATE)
        wav = 0.003 * rng.standard_normal(n).astype(np.float32)
        label = np.zeros(n, dtype=np.float32)
        pos = int(rng.uniform(0.05, 0.3) * SAMPLE_RATE)
        while pos < n:
            seg = int(rng.uniform(0.3, 1.2) * SAMPLE_RATE)
            end = min(n, pos + seg)
            t = np.arange(end - pos) / SAMPLE_RATE
            f0 = rng.uniform(110, 240)
            env = np.sin(np.pi * np.linspace(0, 1, end - pos)) ** 2
            tone = sum(np.sin(2 * np.pi * f0 * k * t) / k for k in range(1, 5))
            wav[pos:end] += (0.3 * env * tone).astype(np.float32)
            label[pos:end] = 1.0
            pos = end + int(rng.uniform(0.15, 0.6) * SAMPLE_RATE)
        if idx in self.dead_takes:
            # microphone was muted for this take: the file is pure digital silence
            wav[:] = 0.0
            label[:] = 0.0
        return wav, label

    def __getitem__(self, idx):
        wav, label = self._render(idx)
        wav = torch.from_numpy(wav)
        rms = wav.pow(2).mean().sqrt()
        gain = TARGET_RMS / rms
        wav = wav * gain  # HANG: silent_take_normalised_to_nan
        return wav, torch.from_numpy(label), idx


def collate_list(batch):
    return batch


def find_split_point(wav, start, end):
    """Index of the quietest ENERGY_WIN window in wav[start:end]."""
    segment = wav[start:end]
    min_energy = math.inf
    quietest_idx = 0
    for i in range(0, segment.numel() - ENERGY_WIN, ENERGY_WIN // 2):  # HANG: nan_energy_never_selected
        window = segment[i:i + ENERGY_WIN]  # HANG: nan_energy_never_selected
        energy = window.pow(2).mean().sqrt().item()  # HANG: nan_energy_never_selected
        if energy < min_energy:  # HANG: nan_energy_never_selected
            min_energy = energy
            quietest_idx = start + i
    return quietest_idx


def iter_chunks(wav, label):
    max_len = int(MAX_CHUNK_S * SAMPLE_RATE)
    search = int(SPLIT_SEARCH_S * SAMPLE_RATE)
    min_len = int(MIN_CHUNK_S * SAMPLE_RATE)
    n = wav.numel()
    start = 0
    while start < n:  # HANG: chunk_cursor_never_advances
        if start + max_len >= n:
            if n - start >= min_len:
                yield wav[start:], label[start:]
            return
        split = find_split_point(wav, start + max_len - search, start + max_len)  # HANG: chunk_cursor_never_advances
        if split - start >= min_len:  # HANG: chunk_cursor_never_advances
            yield wav[start:split], label[start:split]
        start = split  # HANG: chunk_cursor_never_advances


def frames_from(label):
    n = label.numel() // FRAME
    return label[: n * FRAME].view(n, FRAME).mean(dim=1).round()


class ActivityNet(nn.Module):
    def __init__(self, ch=32):
        super().__init__()
        self.front = nn.Conv1d(1, ch, kernel_size=FRAME * 2, stride=FRAME, padding=FRAME // 2)
        self.body = nn.Sequential(
            nn.GELU(),
            nn.Conv1d(ch, ch, 5, padding=2), nn.GELU(),
            nn.Conv1d(ch, ch, 5, padding=2), nn.GELU(),
        )
        self.head = nn.Conv1d(ch, 1, 1)

    def forward(self, x):
        h = self.body(self.front(x.unsqueeze(1)))
        return self.head(h).squeeze(1)


def make_batch(items):
    wavs, labels = [], []
    for wav, label, _idx in items:
        for cw, cl in iter_chunks(wav, label):
            wavs.append(cw)
            labels.append(frames_from(cl))
    max_len = max(w.numel() for w in wavs)
    max_len = ((max_len + FRAME - 1) // FRAME) * FRAME
    x = torch.zeros(len(wavs), max_len)
    y = torch.zeros(len(wavs), max_len // FRAME)
    m = torch.zeros_like(y)
    for i, (w, l) in enumerate(zip(wavs, labels)):
        x[i, : w.numel()] = w
        y[i, : l.numel()] = l
        m[i, : l.numel()] = 1.0
    return x, y, m


def main():
    torch.manual_seed(0)
    torch.set_num_threads(1)
    ds = SyntheticRecordings()
    g = torch.Generator().manual_seed(1234)
    loader = DataLoader(ds, batch_size=4, shuffle=True, generator=g,
                        num_workers=2, collate_fn=collate_list)
    model = ActivityNet()
    opt = torch.optim.AdamW(model.parameters(), lr=2e-3)
    print(f"training on {len(ds)} recordings, {len(loader)} steps/epoch", flush=True)
    t0 = time.time()
    for epoch in range(3):
        for step, items in enumerate(loader):
            x, y, m = make_batch(items)
            logits = model(x)
            T = min(logits.shape[1], y.shape[1])
            loss = (F.binary_cross_entropy_with_logits(logits[:, :T], y[:, :T], reduction="none")
                    * m[:, :T]).sum() / m[:, :T].sum()
            opt.zero_grad()
            loss.backward()
            opt.step()
            ids = [int(i) for _, _, i in items]
            print(f"epoch {epoch} step {step:3d} chunks {x.shape[0]:2d} ids {ids} "
                  f"loss {loss.item():.4f} ({time.time() - t0:.1f}s)", flush=True)
    print("done", flush=True)


if __name__ == "__main__":
    main()

"""Intent-classification chatbot training script written top to bottom, as in the tutorial,
without an `if __name__ == "__main__":` guard; the loader uses two workers and the script asks
for the "spawn" start method (copied from a macOS/Windows setup).

Written from https://github.com/patrickloeber/pytorch-chatbot/issues/2 ("An attempt has been made
to start a new process before the current process has finished its bootstrapping phase"): a
spawned DataLoader worker re-runs the main module as `__mp_main__` to unpickle the dataset; the
unguarded module-level training loop builds the loader again and starts workers of its own
during bootstrapping, which raises RuntimeError in the worker; the worker exits and the parent
fails with "DataLoader worker (pid(s) ...) exited unexpectedly".
"""

import multiprocessing as mp

import torch
from torch import nn
from torch.utils.data import DataLoader, Dataset

mp.set_start_method("spawn", force=True)  # HANG: spawn

VOCAB, INTENTS, BATCH, EPOCHS = 64, 7, 8, 200


class ChatDataset(Dataset):
    def __init__(self):
        g = torch.Generator().manual_seed(0)
        self.x = torch.rand(256, VOCAB, generator=g)
        self.y = torch.randint(0, INTENTS, (256,), generator=g)

    def __len__(self):
        return len(self.y)

    def __getitem__(self, i):
        return self.x[i], self.y[i]


train_loader = DataLoader(ChatDataset(), batch_size=BATCH, shuffle=True, num_workers=2)
model = nn.Sequential(nn.Linear(VOCAB, 32), nn.ReLU(), nn.Linear(32, INTENTS))
criterion = nn.CrossEntropyLoss()
optimizer = torch.optim.Adam(model.parameters(), lr=1e-3)

print("training...", flush=True)
for epoch in range(EPOCHS):
    for words, labels in train_loader:  # HANG: unguarded-loop
        loss = criterion(model(words), labels)
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
    if (epoch + 1) % 20 == 0:
        print(f"epoch {epoch + 1}/{EPOCHS}, loss={loss.item():.4f}", flush=True)

torch.save(model.state_dict(), "/tmp/r11a_chat_model.pth")
print("training complete", flush=True)

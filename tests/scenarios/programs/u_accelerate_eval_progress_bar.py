"""A text classifier fine-tuned with accelerate (no Trainer), evaluated every few optimizer
steps. The progress bar is shown on the main process only, and the evaluation schedule reads
the bar's counter, which a disabled tqdm never advances: only the main process evaluates, and
its `gather_for_metrics` waits for a process that has gone on training.

Written from https://github.com/huggingface/transformers/issues/31532 ("Process hangs when
evaluating the model before finishing an epoch using accelerate"; solved by the reporter: "I
set the progress_bar enabled only on the main process ... so only the main process enter into
the evaluate part, so the gather_for_metrics is waiting for the other process forever").
"""

import torch
from accelerate import Accelerator
from torch import nn
from torch.utils.data import DataLoader, TensorDataset
from tqdm.auto import tqdm


class BagOfWords(nn.Module):
    def __init__(self, vocab: int = 200, classes: int = 3) -> None:
        super().__init__()
        self.embed = nn.EmbeddingBag(vocab, 32)
        self.head = nn.Linear(32, classes)

    def forward(self, tokens: torch.Tensor) -> torch.Tensor:
        return self.head(self.embed(tokens))


def dataset(seed: int, rows: int) -> TensorDataset:
    g = torch.Generator().manual_seed(seed)
    return TensorDataset(torch.randint(0, 200, (rows, 24), generator=g),
                         torch.randint(0, 3, (rows,), generator=g))


def evaluate(model, loader, accelerator: Accelerator) -> float:
    model.eval()
    correct = total = 0
    for tokens, labels in loader:
        with torch.no_grad():
            predictions = model(tokens).argmax(-1)
        predictions, labels = accelerator.gather_for_metrics((predictions, labels))  # HANG: gather
        correct += (predictions == labels).sum().item()
        total += labels.numel()
    model.train()
    return correct / total


def main() -> None:
    accelerator = Accelerator()
    torch.manual_seed(0)
    model = BagOfWords()
    optimizer = torch.optim.AdamW(model.parameters(), lr=1e-3)
    train = DataLoader(dataset(0, 1024), batch_size=16, shuffle=True)
    valid = DataLoader(dataset(1, 128), batch_size=32)
    model, optimizer, train, valid = accelerator.prepare(model, optimizer, train, valid)
    eval_steps, epochs = 10, 3
    progress_bar = tqdm(range(epochs * len(train)), disable=not accelerator.is_local_main_process)
    for epoch in range(epochs):
        for tokens, labels in train:
            loss = nn.functional.cross_entropy(model(tokens), labels)
            accelerator.backward(loss)
            optimizer.step()
            optimizer.zero_grad()
            progress_bar.update(1)
            if progress_bar.n % eval_steps == 0 and progress_bar.n > 0:  # HANG: gather
                accuracy = evaluate(model, valid, accelerator)
                accelerator.print(f"step {progress_bar.n}: accuracy {accuracy:.3f}")
        accelerator.print(f"epoch {epoch} loss {loss.item():.4f}")


if __name__ == "__main__":
    main()

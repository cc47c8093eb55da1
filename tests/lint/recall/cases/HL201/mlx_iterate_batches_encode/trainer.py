# case: HL201 real https://github.com/ml-explore/mlx-examples/pull/373
# The batch iterator encoded every example in full; long examples made a batch as long as
# the longest one and memory spiked until training crashed (fixed by cutting to the max
# sequence length).
import numpy as np
from transformers import AutoTokenizer


def iterate_batches(dataset, tokenizer, batch_size):
    indices = np.random.permutation(len(dataset))
    for i in range(0, len(indices) - batch_size + 1, batch_size):
        batch = [tokenizer.encode(dataset[indices[i + j]]) for j in range(batch_size)]  # expect: HL201
        width = max(len(x) for x in batch)
        yield np.array([x + [0] * (width - len(x)) for x in batch])


def train(model, dataset, optimizer, name):
    tokenizer = AutoTokenizer.from_pretrained(name)
    for batch in iterate_batches(dataset, tokenizer, 4):
        loss = model(batch)
        loss.backward()
        optimizer.step()

# case: HL302 real https://github.com/Marcovaldong/lstmp.pytorch/issues/2
# An LSTM language model on long sequences: the cross-entropy went to NaN after about 1,200
# iterations; clipping the gradients to a max norm of 1.0 was the answer in the thread.
import torch
import torch.nn as nn


class LanguageModel(nn.Module):
    def __init__(self, vocab, hidden):
        super().__init__()
        self.embed = nn.Embedding(vocab, hidden)
        self.rnn = nn.LSTM(hidden, hidden, num_layers=2)
        self.out = nn.Linear(hidden, vocab)

    def forward(self, tokens):
        return self.out(self.rnn(self.embed(tokens))[0])


def train(model, batches, vocab):
    optimizer = torch.optim.SGD(model.parameters(), lr=1.0)
    for inputs, targets in batches:
        logits = model(inputs)
        loss = nn.functional.cross_entropy(logits.view(-1, vocab), targets.view(-1))
        optimizer.zero_grad()
        loss.backward()  # expect: HL302
        optimizer.step()

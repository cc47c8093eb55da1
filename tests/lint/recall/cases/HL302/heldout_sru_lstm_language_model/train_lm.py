# case: HL302 real https://github.com/asappresearch/sru/issues/2
# Held out. The language model trained with an LSTM stopped with a NaN/Inf loss after some
# epochs ("i suspect LSTM gets gradient explosion"); nothing clipped the gradients.
import math

import torch
import torch.nn as nn


class Model(nn.Module):
    def __init__(self, words, hidden, depth):
        super().__init__()
        self.embedding = nn.Embedding(words, hidden)
        self.rnn = nn.LSTM(hidden, hidden, depth)
        self.output = nn.Linear(hidden, words)

    def forward(self, x, state):
        out, state = self.rnn(self.embedding(x), state)
        return self.output(out), state


def train(model, batches, words, lr):
    optimizer = torch.optim.SGD(model.parameters(), lr=lr)
    criterion = nn.CrossEntropyLoss()
    state = None
    for x, y in batches:
        output, state = model(x, state)
        loss = criterion(output.view(-1, words), y.view(-1))
        if math.isnan(loss.item()) or math.isinf(loss.item()):
            raise SystemExit("nan/inf loss")
        optimizer.zero_grad()
        loss.backward()  # expect: HL302
        optimizer.step()
        state = tuple(s.detach() for s in state)

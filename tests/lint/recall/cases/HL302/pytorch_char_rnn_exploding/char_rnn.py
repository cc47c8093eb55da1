# case: HL302 real https://github.com/pytorch/pytorch/issues/2623
# A character-level RNN built from Linear layers (the tutorial's hand-written cell) hit
# exploding gradients on a large dataset; clipping in train() fixed the NaNs.
import torch
import torch.nn as nn


class RNN(nn.Module):
    def __init__(self, input_size, hidden_size, output_size):
        super().__init__()
        self.hidden_size = hidden_size
        self.i2h = nn.Linear(input_size + hidden_size, hidden_size)
        self.i2o = nn.Linear(input_size + hidden_size, output_size)

    def forward(self, x, hidden):
        combined = torch.cat((x, hidden), 1)
        return self.i2o(combined), self.i2h(combined)


def train(rnn, category, line, optimizer, criterion):
    hidden = torch.zeros(1, rnn.hidden_size)
    for i in range(line.size(0)):
        output, hidden = rnn(line[i], hidden)
    loss = criterion(output, category)
    optimizer.zero_grad()
    loss.backward()  # expect: HL302
    optimizer.step()
    return loss.item()


def main(rnn, examples, criterion):
    optimizer = torch.optim.SGD(rnn.parameters(), lr=0.005)
    for category, line in examples:
        train(rnn, category, line, optimizer, criterion)

# case: HL301 real https://github.com/google/brax/pull/152
# The PyTorch training example summed the loss tensor into a running total, keeping every
# step's graph alive (the fix: total_loss += float(loss)).
import torch


def train(model, criterion, optimizer, inputs, steps):
    total_loss = 0
    for _ in range(steps):
        optimizer.zero_grad()
        loss = criterion(model(inputs))
        loss.backward()
        optimizer.step()
        total_loss += loss  # expect: HL301
    return total_loss / steps


def main():
    model = torch.nn.Linear(4, 1)
    print(train(model, lambda out: out.pow(2).mean(), torch.optim.SGD(model.parameters(), 0.1),
                torch.randn(8, 4), 100))

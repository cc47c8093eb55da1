# case: HL301 real https://github.com/rballester/tntorch/pull/19
# The optimizer loop appended each loss, with its whole graph, to a history list: 1000
# iterations froze a machine with 12 GB of RAM.
import torch


def optimize(tensors, loss_function, iterations):
    optimizer = torch.optim.Adam(tensors)
    loss_history = []
    for _ in range(iterations):
        optimizer.zero_grad()
        loss = loss_function(tensors)
        loss.backward()
        optimizer.step()
        loss_history.append(loss)  # expect: HL301
    return loss_history

# case: HL301 real https://github.com/samuelyu2002/ImVisible/issues/2
# Held out. Three running totals summed tensors (the total loss and its two parts) and the
# training ran out of memory; the fix was .item() on each.
import torch.nn.functional as F


def train_epoch(model, loader, optimizer):
    running_loss = 0.0
    running_loss_mse = 0.0
    running_loss_cross_entropy = 0.0
    for images, points, labels in loader:
        pred_points, logits = model(images)
        mse = F.mse_loss(pred_points, points)
        cross_entropy = F.cross_entropy(logits, labels)
        loss = mse + cross_entropy
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
        running_loss += loss  # expect: HL301
        running_loss_mse += mse  # expect: HL301
        running_loss_cross_entropy += cross_entropy  # expect: HL301
    return running_loss, running_loss_mse, running_loss_cross_entropy

# case: HL301 real https://github.com/jokester-zzz/SSA-SC/issues/2
# Per-key losses were accumulated as tensors (loss[key], not loss[key].item()), and GPU
# memory rose continuously.
def train_epoch(model, loader, optimizer):
    epoch_losses = {}
    for batch in loader:
        loss = model.compute_loss(model(batch), batch)
        loss["total"].backward()
        optimizer.step()
        for key in loss:
            epoch_losses[key] = epoch_losses.get(key, 0) + loss[key]  # expect: HL301
    return epoch_losses

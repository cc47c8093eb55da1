# case: HL301 real https://github.com/TRI-ML/packnet-sfm/pull/51
# Held out. Each step's output, loss tensor included, was appended to the epoch's list of
# outputs; the fix detached the loss first.
def train_epoch(model, dataloader, optimizer):
    outputs = []
    for batch in dataloader:
        optimizer.zero_grad()
        output = model(batch)
        output["loss"].backward()
        optimizer.step()
        outputs.append({"loss": output["loss"], "metrics": output["metrics"]})  # expect: HL301
    return outputs

# case: HL301 real https://github.com/BatsResearch/labelmodels/issues/4
# running_loss accumulated non-detached loss tensors over the epoch; with a large training
# set the GPU ran out of memory and the process exited silently.
import torch


class LabelModel(torch.nn.Module):
    def _do_estimate_label_model(self, batches, config):
        optimizer = torch.optim.SGD(self.parameters(), lr=config.step_size)
        for epoch in range(config.epochs):
            running_loss = 0.0
            for i_batch, inputs in enumerate(batches):
                optimizer.zero_grad()
                log_likelihood = self(*inputs)
                loss = -1 * torch.mean(log_likelihood)
                loss.backward()
                optimizer.step()
                running_loss += loss  # expect: HL301
            print(epoch, running_loss / len(batches))

import torch


def colorize(model, image_tensor):
    with torch.no_grad():
        return model(image_tensor)

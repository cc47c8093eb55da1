import torch

from endpoint import RemoteModel


def teacher_labels(prompts):
    teacher = RemoteModel("http://teacher:8000/generate")
    return [torch.tensor(len(teacher.generate(p))) for p in prompts]

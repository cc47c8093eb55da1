# case: HL401 textbook https://docs.python.org/3/library/subprocess.html#subprocess.Popen.wait
# The issue's own example: wait(), then read. Reading after the wait is the deadlock.
import subprocess

import torch


def export_onnx_and_check(path):
    torch.save({}, path)
    proc = subprocess.Popen(["python", "-m", "checker", path], stdout=subprocess.PIPE)
    proc.wait()  # expect: HL401
    report = proc.stdout.read()
    return report

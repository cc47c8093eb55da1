# case: HL401 textbook
# The same bug under import aliases.
from subprocess import PIPE as CAPTURE
from subprocess import Popen as Spawn


def list_gpus():
    p = Spawn(["nvidia-smi", "-q"], stdout=CAPTURE)
    p.wait()  # expect: HL401
    return p.stdout.read()

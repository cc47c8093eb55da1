# case: HL401 textbook
# Polling until the child exits is a wait() by another name: nobody reads the pipe meanwhile.
import subprocess
import time


def preprocess(shard):
    child = subprocess.Popen(["preprocess", shard], stdout=subprocess.PIPE)
    while child.poll() is None:  # expect: HL401
        time.sleep(0.5)
    return child.stdout.read()

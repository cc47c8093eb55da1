# case: HL401 fixed
# Output to a file or DEVNULL: no pipe to fill.
import subprocess


def run(cmd, log_path):
    with open(log_path, "wb") as log:
        proc = subprocess.Popen(cmd, stdout=log, stderr=subprocess.DEVNULL)
        return proc.wait()

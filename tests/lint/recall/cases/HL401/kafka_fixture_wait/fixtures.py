# case: HL401 real https://github.com/dpkp/kafka-python/pull/1689
# A test fixture started a helper script with both streams piped and waited for its exit
# code without ever reading them.
import subprocess


def create_topic(script, args):
    proc = subprocess.Popen([script, *args], stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    if proc.wait() != 0:  # expect: HL401
        raise RuntimeError("topic creation failed")

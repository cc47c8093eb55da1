# case: HL401 fixed https://github.com/localstack/localstack/pull/1101
# The fix: communicate() reads both pipes while waiting.
import subprocess


def run(command):
    process = subprocess.Popen(command, shell=True, stdout=subprocess.PIPE,
                               stderr=subprocess.PIPE)
    output, _ = process.communicate()
    return output.decode()

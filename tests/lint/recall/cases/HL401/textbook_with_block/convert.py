# case: HL401 textbook
# Leaving a `with Popen(...)` block waits for the child; the block never read the pipe.
import subprocess


def convert(src, dst):
    with subprocess.Popen(["ffmpeg", "-i", src, dst], stderr=subprocess.PIPE) as proc:  # expect: HL401
        print("converting", proc.pid)
    return proc.returncode

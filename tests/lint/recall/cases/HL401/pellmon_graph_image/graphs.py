# case: HL401 real https://github.com/motoz/PellMon/issues/48
# The web server rendered a graph with an external tool writing the PNG to stdout, waited
# for the tool, then read the image: a big graph filled the pipe and the server deadlocked.
import subprocess


def render_graph(args):
    cmd = ["rrdtool", "graph", "-", *args]
    popen = subprocess.Popen(cmd, stdout=subprocess.PIPE)
    popen.wait()  # expect: HL401
    image = popen.stdout.read()
    return image

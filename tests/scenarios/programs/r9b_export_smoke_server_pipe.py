"""Train a tiny linear model, then run the project's export script, which writes the model card
and brings up a local HTTP server over the export directory for a smoke test. The trainer runs
the script with `subprocess.run(..., capture_output=True)` so that it can attach the script's
log to the run record.

Written from https://github.com/gptme/gptme/issues/3756 ("hang when background descendant
retains output pipe (blocked reader on EOF)"), see also python/cpython#76116 (grandchildren and
stdout=PIPE). The export script starts the server with `nohup ... >server.log &`: stdout is
redirected, but stderr is still the trainer's capture pipe, and the backgrounded server keeps
that write end open after the script itself has exited. `communicate()` inside `run()` waits for
EOF on stderr, which only comes when the server exits, i.e. never.
"""

import json
import os
import random
import socket
import subprocess
import sys
import tempfile

EXPORT_SH = """\
set -e
out="$1"; port="$2"
echo "[export] writing model card to $out"
"$PYTHON" -c 'import json,sys; m=json.load(open(sys.argv[1])); print(len(m["w"]), "weights")' "$out/model.json"
echo '{"format": "json-linear", "version": 1}' > "$out/card.json"
echo "[export] starting smoke-test server on 127.0.0.1:$port"
nohup "$PYTHON" -m http.server "$port" --bind 127.0.0.1 --directory "$out" >"$out/server.log" &  # HANG: bg-server-keeps-stderr
"$PYTHON" -c 'import sys,time,urllib.request as u
for _ in range(50):
    try: print("[export] smoke test:", u.urlopen(sys.argv[1]).status); break
    except OSError: time.sleep(0.1)' "http://127.0.0.1:$port/card.json"
echo "[export] done"
"""


def train(steps=3000, dim=16, lr=0.05, seed=0):
    rng = random.Random(seed)
    true_w = [rng.uniform(-1, 1) for _ in range(dim)]
    w = [0.0] * dim
    for step in range(steps):
        x = [rng.gauss(0, 1) for _ in range(dim)]
        y = sum(a * b for a, b in zip(true_w, x, strict=True)) + rng.gauss(0, 0.1)
        err = sum(a * b for a, b in zip(w, x, strict=True)) - y
        w = [wi - lr * err * xi for wi, xi in zip(w, x, strict=True)]
        if step % 1000 == 0:
            print(f"step {step}: sq_err={err * err:.4f}", flush=True)
    return w


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def export(weights, out_dir):
    with open(os.path.join(out_dir, "model.json"), "w") as f:
        json.dump({"w": weights}, f)
    script = os.path.join(out_dir, "export.sh")
    with open(script, "w") as f:
        f.write(EXPORT_SH)
    env = dict(os.environ, PYTHON=sys.executable)
    cmd = ["bash", script, out_dir, str(free_port())]
    proc = subprocess.run(cmd, env=env, capture_output=True, text=True)  # HANG: capture-waits-for-eof
    return proc.returncode, proc.stdout + proc.stderr


def main():
    weights = train()
    print("training done, exporting", flush=True)
    out_dir = tempfile.mkdtemp(prefix="r9b_export_")
    rc, log = export(weights, out_dir)
    with open(os.path.join(out_dir, "run_record.json"), "w") as f:
        json.dump({"export_rc": rc, "export_log": log}, f)
    print(f"export finished rc={rc}", flush=True)


if __name__ == "__main__":
    main()

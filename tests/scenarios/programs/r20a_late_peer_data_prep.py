"""Two-process JAX token model where the data host joins the rendezvous late (healthy).

Source: https://github.com/mosaicml/composer/pull/272
  "Every single time I've seen init_process_group fail, it's just been because something in
  initialization is slow with high variance across ranks" (so the default distributed
  timeout was raised a lot; the waiting ranks are healthy, just waiting for a slow peer)

What happens:
  The file launches two JAX processes (gloo CPU collectives). Process 1 is the "data host":
  before it joins jax.distributed it tokenizes a synthetic text corpus with a pure-Python
  tokenizer, builds the vocabulary and packs fixed-length training sequences into .npy shards
  for both processes. That takes roughly 35-55 s on a 2-core machine and prints nothing.
  Process 0 calls jax.distributed.initialize() at once and sits silently inside it, waiting
  for process 1 to register with the coordinator (the default initialization_timeout is 300 s,
  far away). Once process 1 joins, both load their shard and train a small bigram language
  model with data-parallel gradient averaging (lax.pmean), logging every 5 steps, and exit 0.
  The long silent phase (process 0 in initialize, process 1 in its tokenizer loop) looks like
  a rendezvous hang to a naive watchdog but is healthy.
"""
import os
import re
import subprocess
import sys
import tempfile
import time

NPROC = 2
SEQ_LEN = 64


def _die_with_parent():
    import ctypes
    import signal
    ctypes.CDLL("libc.so.6").prctl(1, signal.SIGKILL)  # PR_SET_PDEATHSIG


def launch():
    import random
    port = random.randint(20000, 40000)
    workdir = tempfile.mkdtemp(prefix="r20a_late_")
    procs = []
    for rank in range(NPROC):
        env = dict(os.environ, R20A_RANK=str(rank), R20A_PORT=str(port), R20A_DIR=workdir,
                   XLA_FLAGS="--xla_cpu_multi_thread_eigen=false")
        procs.append(subprocess.Popen([sys.executable, os.path.abspath(__file__)], env=env,
                                      preexec_fn=_die_with_parent))
    print(f"[launcher] started {NPROC} workers on port {port}, workdir {workdir}", flush=True)
    rc = 0
    for p in procs:
        rc = p.wait() or rc
    print(f"[launcher] all workers exited rc={rc}", flush=True)
    sys.exit(rc)


def synth_corpus(n_docs, seed=7):
    import numpy as np
    rng = np.random.default_rng(seed)
    syll = ["ka", "lo", "mi", "ne", "ru", "sa", "ti", "vo", "ze", "qu", "ph", "str", "on", "el"]
    words = ["".join(rng.choice(syll, size=rng.integers(1, 4))) for _ in range(3000)]
    probs = 1.0 / np.arange(1, len(words) + 1)
    probs /= probs.sum()
    for _ in range(n_docs):
        n = int(rng.integers(40, 120))
        toks = rng.choice(len(words), size=n, p=probs)
        yield " ".join(words[t] for t in toks) + "."


def tokenize_corpus(out_dir, n_docs=170000):
    import numpy as np
    from array import array
    splitter = re.compile(r"[a-z]+|[^\sa-z]")
    vocab = {"<pad>": 0, "<eos>": 1}
    ids = array("i")
    for doc in synth_corpus(n_docs):
        for piece in splitter.findall(doc):
            # sub-word split: every word becomes chunks of up to 3 characters
            for k in range(0, len(piece), 3):
                sub = piece[k:k + 3]
                if sub not in vocab:
                    vocab[sub] = len(vocab)
                ids.append(vocab[sub])
        ids.append(1)
    n_seq = len(ids) // SEQ_LEN
    seqs = np.frombuffer(ids, dtype=np.int32)[:n_seq * SEQ_LEN].reshape(n_seq, SEQ_LEN)
    for r in range(NPROC):
        np.save(os.path.join(out_dir, f"shard_{r}.npy"), seqs[r::NPROC])
    with open(os.path.join(out_dir, "vocab_size.txt"), "w") as f:
        f.write(str(len(vocab)))
    return n_seq, len(vocab)


def worker(rank):
    out_dir = os.environ["R20A_DIR"]
    tag = f"[proc {rank}]"
    if rank == 1:
        print(f"{tag} preparing token shards before joining the job", flush=True)
        t0 = time.time()
        n_seq, vsz = tokenize_corpus(out_dir)  # HANG: data_host_tokenize_before_init
        print(f"{tag} wrote {n_seq} sequences, vocab {vsz}, in {time.time() - t0:.1f}s", flush=True)

    import numpy as np
    import jax
    import jax.numpy as jnp
    from jax.sharding import Mesh, PartitionSpec as P, NamedSharding
    from jax.experimental import multihost_utils

    jax.config.update("jax_cpu_collectives_implementation", "gloo")
    print(f"{tag} connecting to coordinator", flush=True)
    t0 = time.time()
    jax.distributed.initialize(coordinator_address=f"127.0.0.1:{os.environ['R20A_PORT']}",  # HANG: wait_for_late_peer
                               num_processes=NPROC, process_id=rank)
    print(f"{tag} joined job after {time.time() - t0:.1f}s", flush=True)
    multihost_utils.sync_global_devices("shards_ready")

    seqs = np.load(os.path.join(out_dir, f"shard_{rank}.npy"))
    vocab = int(open(os.path.join(out_dir, "vocab_size.txt")).read())
    mesh = Mesh(np.array(jax.devices()), ("dp",))
    dim, local_bs = 32, 16

    def loss_fn(params, tok):
        h = params["emb"][tok[:, :-1]]
        logits = h @ params["out"]
        logp = jax.nn.log_softmax(logits)
        return -jnp.mean(jnp.take_along_axis(logp, tok[:, 1:, None], axis=-1))

    def local_step(params, tok):
        loss, g = jax.value_and_grad(loss_fn)(params, tok)
        g = jax.lax.pmean(g, "dp")
        params = jax.tree.map(lambda p, gg: p - 0.5 * gg, params, g)
        return params, jax.lax.pmean(loss, "dp")

    step_fn = jax.jit(jax.shard_map(local_step, mesh=mesh, in_specs=(P(), P("dp")),
                                    out_specs=(P(), P())))
    key = jax.random.PRNGKey(0)
    k1, k2 = jax.random.split(key)
    params = {"emb": 0.1 * jax.random.normal(k1, (vocab, dim)),
              "out": 0.1 * jax.random.normal(k2, (dim, vocab))}
    params = jax.device_put(params, NamedSharding(mesh, P()))
    for step in range(80):
        lo = (step * local_bs) % (len(seqs) - local_bs)
        tok = multihost_utils.host_local_array_to_global_array(seqs[lo:lo + local_bs], mesh, P("dp"))
        params, loss = step_fn(params, tok)
        if step % 5 == 0:
            print(f"{tag} step {step} loss {float(loss):.4f}", flush=True)
        time.sleep(0.1)
    multihost_utils.sync_global_devices("train_done")
    print(f"{tag} training done", flush=True)
    jax.distributed.shutdown()


if __name__ == "__main__":
    if "R20A_RANK" in os.environ:
        worker(int(os.environ["R20A_RANK"]))
    else:
        launch()

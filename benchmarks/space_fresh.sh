#!/usr/bin/env bash
# The whole book live through the Space's JupyterLab, as a reader meets it on a GPU the book has never
# seen (issue 39): space/start.sh serves notebooks/, space/run_on_server.py opens each notebook in a
# NEW session (a fresh kernel, whose start is counted in the notebook's time) and runs its cells in
# order, one notebook after the other, as a reader clicking through the book does. Every cache is
# empty at the start (the book's ATTN_PROFILED_CACHE, Inductor's and Triton's), and this GPU's own
# replay set is removed from the copy, so every page that could read it measures live instead.
# Run from the repo root on a CUDA machine with JupyterLab; results (one line per notebook and the
# total) go to $OUT/space_fresh.log.
#   OUT=/tmp/space_fresh bash benchmarks/space_fresh.sh [notebook.ipynb ...]
set -u
OUT=${OUT:-/tmp/space_fresh}
mkdir -p "$OUT"
export PYTHONPATH=$PWD${PYTHONPATH:+:$PYTHONPATH} PYTHONUNBUFFERED=1
export PATH=$PATH:/usr/local/cuda/bin
slug=$(python3 -c 'import torch; from helpers.core.replay_set import gpu_slug; print(gpu_slug(torch.cuda.get_device_name()))')
{ nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
  python3 -c 'import torch, triton; print("torch", torch.__version__, "triton", triton.__version__, "cudnn", torch.backends.cudnn.version())'
  python3 -c 'import jupyterlab, jupyter_server; print("jupyterlab", jupyterlab.__version__, "jupyter_server", jupyter_server.__version__)'
  echo "commit $(git rev-parse --short HEAD 2>/dev/null || echo unknown); own replay set removed: notebooks/traces/$slug"; } | tee "$OUT/versions.log"
rm -rf "notebooks/traces/$slug"
cache=$(mktemp -d)
export ATTN_PROFILED_CACHE=$cache/attn TORCHINDUCTOR_CACHE_DIR=$cache/inductor TRITON_CACHE_DIR=$cache/triton
port=$(python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
token_file="$OUT/space_token"
start=$(date +%s.%N)
ATTN_PROFILED_HOST=127.0.0.1 ATTN_PROFILED_PORT=$port ATTN_PROFILED_TOKEN_FILE=$token_file \
  setsid bash space/start.sh > "$OUT/space_start.log" 2>&1 &
server=$!
for _ in $(seq 120); do [ -s "$token_file" ] && curl -s -o /dev/null "http://127.0.0.1:$port/api/status" && break; sleep 0.5; done
up=$(python3 -c "import time; print(f'{time.time() - $start:.1f}')")
echo "JupyterLab up after $up s" | tee "$OUT/space_fresh.log"
# the book's order (_toc.yml), each notebook in a fresh kernel
if [ $# -gt 0 ]; then nbs=("$@"); else
  mapfile -t nbs < <(python3 -c 'import re; print("\n".join(m + ".ipynb" for m in re.findall(r"file: notebooks/(\S+)", open("_toc.yml").read())))')
fi
t0=$(date +%s.%N)
(cd notebooks && python3 ../space/run_on_server.py --url "http://127.0.0.1:$port" --token-file "$token_file" "${nbs[@]}") \
  2>&1 | tee -a "$OUT/space_fresh.log"
python3 -c "import time; print(f'all {len(\"${nbs[*]}\".split())} notebooks, fresh kernels, one after the other: {time.time() - $t0:.1f} s')" | tee -a "$OUT/space_fresh.log"
kill -- -"$server" 2>/dev/null; wait "$server" 2>/dev/null
rm -f "$token_file"
du -sh "$cache"/* 2>/dev/null | tee -a "$OUT/space_fresh.log"

#!/usr/bin/env bash
# One GPU session, end to end. Run from the repo root on a CUDA machine; results go to
# ${OUT:-/tmp/gpu_session}. STEPS picks what runs (default: all, in this order):
#   record     record the replay set (notebooks/traces) and the do_bench comparison
#   ceilings   this GPU's bf16 matmul and device-to-device copy ceilings (do_bench)
#   own_model  the "Your own model" traces and the large benchmark traces
#   ncu        Nsight Compute's counters for the stages the registry marks has_ncu (needs ncu)
#   tests      the GPU tests, and the table tests against the traces just recorded
#   notebooks  execute every notebook live with nbclient, as the book's build does: from a cold
#              cache, then warm (PASSES="cold warm"), per notebook and per cell over SLOW_CELL s;
#              KEEP_CACHE=1 keeps ATTN_PROFILED_CACHE (a warm pass in a second call); POOL=N starts
#              the next N notebooks' kernels (and its import torch, space/kernel_startup.py) while the
#              current one runs, as a reader's JupyterLab does: each line then gives the pooled time
#              and the kernel start + warm-up that a fresh kernel adds (benchmarks/run_notebooks.py)
#   space      start JupyterLab with space/start.sh, as the GPU Space does, and run every notebook
#              through it (space/run_on_server.py), then the tests of space/start.sh
# What the recording steps wrote comes back packed in $OUT/recorded.tar.gz.
#   STEPS="tests space" bash benchmarks/gpu_session.sh
# NOTEBOOKS picks which notebooks the notebooks step executes (default: all of them):
#   STEPS=notebooks NOTEBOOKS="notebooks/06c_flex.ipynb notebooks/09_roofline.ipynb" bash benchmarks/gpu_session.sh
set -u
OUT=${OUT:-/tmp/gpu_session}
STEPS=${STEPS:-record ceilings own_model ncu tests notebooks space}
NOTEBOOKS=${NOTEBOOKS:-notebooks/*.ipynb}
mkdir -p "$OUT/executed"
export PYTHONPATH=$PWD${PYTHONPATH:+:$PYTHONPATH} PYTHONUNBUFFERED=1
start=$(date +%s)
times=()
step() { [[ " $STEPS " == *" $1 "* ]]; }
took() { times+=("$1 $(( $(date +%s) - $2 )) s"); }

if step record; then
  t=$(date +%s)
  # every registered stage but those with a hook module: hub_flash needs the Hub or a local kernel
  # (tools/build_local_flash_attn.py); record it separately
  stages=$(python3 -c 'from helpers.core.stages import stages_where; print(*stages_where(hook=None))')
  # shellcheck disable=SC2086  # one stage name per word
  python3 tools/record.py --sweep --stages $stages 2>&1 | grep -v "Profiler clears events\|_warn_once" | tee "$OUT/record.log"
  took record "$t"
fi

if step ceilings; then
  t=$(date +%s)
  python3 tools/record_ceilings.py 2>&1 | tee "$OUT/ceilings.log"
  took ceilings "$t"
fi

if step own_model; then
  t=$(date +%s)
  python3 tools/record_own_model.py 2>&1 | grep -v "_warn_once" | tee "$OUT/own_model.log"
  took own_model "$t"
fi

if step ncu; then
  t=$(date +%s)
  PATH=$PATH:/usr/local/cuda/bin python3 tools/record_ncu.py 2>&1 | tee "$OUT/ncu.log"
  took ncu "$t"
fi

if step record || step ceilings || step own_model || step ncu; then
  tar czf "$OUT/recorded.tar.gz" notebooks/traces benchmarks/results benchmarks/data
fi

if step tests; then
  t=$(date +%s)
  # every test that runs without a browser or a book build: the GPU ones, and the table tests
  # against the traces just recorded
  timeout 480 python3 -m pytest -q -p no:cacheprovider -W ignore::UserWarning -m "not browser" \
    --ignore=tests/test_space.py --ignore=tests/test_colab.py tests 2>&1 | tail -30 | tee "$OUT/pytest_gpu.log"
  took "gpu tests" "$t"
fi

if step notebooks; then
  t=$(date +%s)
  # the whole book live, twice: from a cold cache (the session's cache of ncu tables, ceilings and
  # timed forwards, ATTN_PROFILED_CACHE, emptied first), then warm, as a reader's second run or a
  # later notebook of the same session finds it. Per notebook and per cell over SLOW_CELL seconds.
  export ATTN_PROFILED_CACHE=${ATTN_PROFILED_CACHE:-$OUT/cache}
  # KEEP_CACHE=1: a later call on the same machine runs warm from what an earlier one measured
  [ "${KEEP_CACHE:-0}" = 1 ] || rm -rf "$ATTN_PROFILED_CACHE"
  for pass in ${PASSES:-cold warm}; do
  mkdir -p "$OUT/executed/$pass"
  pool=(); [ "${POOL:-0}" -gt 0 ] && pool=(--pool "$POOL")
  # shellcheck disable=SC2086  # NOTEBOOKS is a list of paths or globs
  python3 benchmarks/run_notebooks.py ${pool[@]+"${pool[@]}"} "$OUT/executed/$pass" "$pass" $NOTEBOOKS 2>&1 \
    | grep --line-buffered -v "Kernel is running over TCP without encryption" | tee "$OUT/notebooks_$pass.log"
  done
  took notebooks "$t"
fi

if step space; then
  t=$(date +%s)
  port=$(python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
  token_file="$OUT/space_token"
  ATTN_PROFILED_HOST=127.0.0.1 ATTN_PROFILED_PORT=$port ATTN_PROFILED_TOKEN_FILE=$token_file \
    setsid bash space/start.sh > "$OUT/space_start.log" 2>&1 &
  server=$!
  for _ in $(seq 90); do [ -s "$token_file" ] && curl -s -o /dev/null "http://127.0.0.1:$port/api/status" && break; sleep 1; done
  (cd notebooks && python3 ../space/run_on_server.py --url "http://127.0.0.1:$port" --token-file "$token_file" *.ipynb) \
    2>&1 | tee "$OUT/space_notebooks.log"
  kill -- -"$server" 2>/dev/null; wait "$server" 2>/dev/null
  rm -f "$token_file"
  timeout 300 python3 -m pytest -q -p no:cacheprovider -m "not browser" tests/test_space.py 2>&1 | tail -15 | tee "$OUT/pytest_space.log"
  took space "$t"
fi

echo "${times[*]}, total $(( $(date +%s) - start )) s" | tee "$OUT/times.log"

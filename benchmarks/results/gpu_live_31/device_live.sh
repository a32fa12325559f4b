#!/usr/bin/env bash
# One call on the device: install the wheels, versions, the book live (PASSES), pack what came out.
# DEADLINE: seconds from start by which everything (packing included) must be done.
# CACHE_IN: a folder of tarballs (attn cache, compile caches) to restore first (a warm pass on a fresh machine).
T0=$(date +%s); DEADLINE=${DEADLINE:-570}
left() { echo $(( DEADLINE - ($(date +%s) - T0) )); }
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/*.whl 2>&1 | tail -3
export PYTHONPATH=/tmp/site PATH=$PATH:/usr/local/cuda/bin ATTN_PROFILED_CACHE=/tmp/attn_cache PYTHONUNBUFFERED=1
{ date -u; nvidia-smi; python3 -c "import torch,triton,sys;print('python',sys.version.split()[0],'torch',torch.__version__,'cuda',torch.version.cuda,'cudnn',torch.backends.cudnn.version(),'triton',triton.__version__,torch.cuda.get_device_name(0),torch.cuda.get_device_properties(0))"; ncu --version; python3 -c "import nbclient, ipykernel, plotly, ipywidgets, tqdm; print('nbclient', nbclient.__version__, 'ipykernel', ipykernel.__version__, 'plotly', plotly.__version__)"; python3 -c "import kernels; print('kernels', kernels.__version__)"; nproc; } 2>&1 | tee $OUT/versions.log
if [ -n "${CACHE_IN:-}" ]; then for f in "$CACHE_IN"/*.tar.gz; do tar xzf "$f" -C / ; done; du -sh /tmp/attn_cache /tmp/torchinductor_root ~/.triton 2>/dev/null; fi
S=/tmp/sess; mkdir -p $S
nvidia-smi -L | grep -q H100 && echo "an H100: no replay set of its own, every page live"
# a pass named <cold|warm>-pooled runs with POOL=$POOL_DEPTH (default 3: benchmarks/run_notebooks.py --pool 3)
for pass in ${PASSES:-cold warm-pooled warm}; do
  l=$(( $(left) - ${PACK_S:-40} )); [ "$l" -gt 20 ] || { echo "no time left for $pass"; break; }
  echo "== pass $pass, limit $l s"
  POOL=$(case $pass in *pooled*) echo "${POOL_DEPTH:-3}";; *) echo 0;; esac) KEEP_CACHE=1 NOTEBOOKS="${NOTEBOOKS:-notebooks/*.ipynb}" STEPS=notebooks PASSES=$pass OUT=$S timeout $l bash benchmarks/gpu_session.sh
  echo "== pass $pass done at $(( $(date +%s) - T0 )) s"
done
[ -n "${AFTER:-}" ] && { l=$(( $(left) - ${PACK_S:-40} )); echo "== after: $l s"; [ "$l" -gt 20 ] && timeout $l bash -c "$AFTER" 2>&1 | tee $OUT/after.log; }
cp $S/notebooks_*.log $OUT/ 2>/dev/null
tar czf $OUT/executed.tar.gz -C $S . 2>/dev/null
tar czf $OUT/attn_cache.tar.gz /tmp/attn_cache 2>/dev/null
tar czf $OUT/compile_cache.tar.gz /tmp/torchinductor_root /root/.triton/cache 2>/dev/null
ls -la $OUT; echo "total $(( $(date +%s) - T0 )) s"

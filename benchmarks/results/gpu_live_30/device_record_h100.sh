#!/usr/bin/env bash
T0=$(date +%s); DEADLINE=${DEADLINE:-400}
left() { echo $(( DEADLINE - ($(date +%s) - T0) )); }
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/*.whl 2>&1 | tail -3
export PYTHONPATH=/tmp/site PATH=$PATH:/usr/local/cuda/bin ATTN_PROFILED_CACHE=/tmp/attn_cache PYTHONUNBUFFERED=1
{ date -u; nvidia-smi -L; nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv; python3 -c "import torch,triton,sys;print('python',sys.version.split()[0],'torch',torch.__version__,'cuda',torch.version.cuda,'cudnn',torch.backends.cudnn.version(),'triton',triton.__version__,torch.cuda.get_device_properties(0))"; ncu --version | tail -1; } 2>&1 | tee $OUT/versions.log
cp -r .gpurun/overlay/. .   # this branch's fix (capture.py: the profiler's cycle warning)
git diff --stat
S=/tmp/sess; mkdir -p $S
# 1. the fix, live: 01 cold; count stderr outputs
STEPS=notebooks PASSES=cold NOTEBOOKS=notebooks/01_naive.ipynb OUT=$S bash benchmarks/gpu_session.sh 2>&1 | grep -v IPKernelApp
python3 -c "
import json; d=json.load(open('$S/executed/cold/01_naive.ipynb'))
e=[o.get('text','')[:200] for c in d['cells'] if c['cell_type']=='code' for o in c.get('outputs',[]) if o.get('name')=='stderr']
print('stderr outputs in 01 live:', len(e), e)"
# 2. what a notebook's first cell pays before any work
( time python3 -c "import torch" ) 2>&1 | grep real | sed 's/^/import torch: /'
( time python3 -c "import torch; torch.zeros(1, device='cuda'); torch.cuda.synchronize()" ) 2>&1 | grep real | sed 's/^/import torch + CUDA context: /'
( time python3 -c "import helpers" ) 2>&1 | grep real | sed 's/^/import helpers: /'
python3 -X importtime -c "import helpers" 2> $OUT/importtime.log; sort -t'|' -k2 -n -r $OUT/importtime.log | head -15
# 3. the replay set of this GPU (an H100 only: the H200 has its set)
nvidia-smi -L | grep -q H100 || { echo "not an H100: no recording"; ls -la $OUT; echo "total $(( $(date +%s) - T0 )) s"; exit 0; }
echo "== record at $(( $(date +%s) - T0 )) s"
timeout $(( $(left) - 60 )) python3 tools/record.py --sweep --stages naive inplace sdpa_math sdpa_efficient sdpa_flash sdpa_cudnn sdpa_auto naive_compiled flex flex_sliding 2>&1 | grep -v "Profiler clears events\|_warn_once" | tee $OUT/record.log
echo "== ceilings at $(( $(date +%s) - T0 )) s"
timeout 40 python3 tools/record_ceilings.py 2>&1 | tee $OUT/ceilings.log
echo "== ncu at $(( $(date +%s) - T0 )) s, $(( $(left) - 25 )) s left for it"
[ $(left) -gt 90 ] && timeout $(( $(left) - 25 )) python3 tools/record_ncu.py --no-sweep 2>&1 | tee $OUT/ncu.log
tar czf $OUT/replay.tar.gz notebooks/traces/h1* benchmarks/results/profiler_vs_do_bench_h1* 2>&1 | tail -2
ls -la $OUT; echo "total $(( $(date +%s) - T0 )) s"

#!/usr/bin/env bash
# One device call: this GPU's whole replay set with tools/record_all.py's recorders, each under a
# time limit so that one call (600 s) keeps what it finished; ncu runs last and --resume goes on
# in a later call. Run from the repository root on the device: OUT=... bash <this file>
T0=$(date +%s); DEADLINE=${DEADLINE:-570}
left() { echo $(( DEADLINE - ($(date +%s) - T0) )); }
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/*.whl 2>&1 | tail -3
export PYTHONPATH=/tmp/site PATH=$PATH:/usr/local/cuda/bin ATTN_PROFILED_CACHE=/tmp/attn_cache PYTHONUNBUFFERED=1
{ date -u; nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv; python3 -c "import torch,triton,sys;print('python',sys.version.split()[0],'torch',torch.__version__,'cuda',torch.version.cuda,'cudnn',torch.backends.cudnn.version(),'triton',triton.__version__,torch.cuda.get_device_properties(0))"; ncu --version | tail -1; } 2>&1 | tee $OUT/versions.log
quiet() { grep --line-buffered -v "Profiler clears events\|_warn_once"; }
for step in ${STEPS:-record ceilings own_model smem_cliff training}; do
  echo "== $step at $(( $(date +%s) - T0 )) s, $(left) s left"
  case $step in
    training) timeout $(( $(left) - 90 )) python3 tools/record_all.py --only training 2>&1 | quiet | tee $OUT/$step.log ;;
    *) timeout $(( $(left) - 60 )) python3 tools/record_all.py --only $step 2>&1 | quiet | tee $OUT/$step.log ;;
  esac
done
echo "== ncu at $(( $(date +%s) - T0 )) s, $(left) s left"
[ $(left) -gt 60 ] && timeout $(( $(left) - 25 )) python3 tools/record_ncu.py --resume 2>&1 | tee -a $OUT/ncu.log
tar czf $OUT/replay.tar.gz notebooks/traces/h1* benchmarks/results/profiler_vs_do_bench_h1* benchmarks/results/*h100* 2>&1 | tail -2
ls -la $OUT; echo "total $(( $(date +%s) - T0 )) s"

#!/usr/bin/env bash
# One call on the device: this GPU's replay set, recorded with the one recording command
# (tools/record_all.py), one recorder at a time under its share of the call; the set comes back
# packed. On a GPU that has its set already (the H200) it records nothing.
# DEADLINE: seconds from start by which everything, packing included, must be done.
T0=$(date +%s); DEADLINE=${DEADLINE:-570}
left() { echo $(( DEADLINE - ($(date +%s) - T0) )); }
stamp() { echo "== $1 at $(( $(date +%s) - T0 )) s, $(left) s left"; }
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/*.whl 2>&1 | tail -3
export PYTHONPATH=/tmp/site PATH=$PATH:/usr/local/cuda/bin PYTHONUNBUFFERED=1
{ date -u; nvidia-smi; python3 -c "import torch,triton,sys;print('python',sys.version.split()[0],'torch',torch.__version__,'cuda',torch.version.cuda,'cudnn',torch.backends.cudnn.version(),'triton',triton.__version__,torch.cuda.get_device_name(0),torch.cuda.get_device_properties(0))"; ncu --version; nproc; git log -1 --format='%H %s' 2>/dev/null; git status --short | head; } 2>&1 | tee $OUT/versions.log
SLUG=$(python3 -c "import torch; from helpers.core.replay_set import gpu_slug; print(gpu_slug(torch.cuda.get_device_name(0)))")
echo "replay set: notebooks/traces/$SLUG"
[ -d notebooks/traces/$SLUG ] && { echo "this GPU has a replay set already: nothing recorded"; exit 0; }
run() {   # run NAME LIMIT COMMAND...: one recorder, its output kept in $OUT/NAME.log
  local name=$1 limit=$2; shift 2
  [ "$limit" -gt 20 ] || { echo "== $name: no time left"; return; }
  stamp "$name (limit $limit s)"
  timeout "$limit" "$@" 2>&1 | grep --line-buffered -v "Profiler clears events\|_warn_once" | tee $OUT/$name.log | tail -n 60
  stamp "$name done (exit ${PIPESTATUS[0]})"
}
python3 tools/record_all.py --dry-run | tee $OUT/plan.log
run record   $(( $(left) - 330 )) python3 tools/record_all.py --only record
run ncu      $(( $(left) - 110 )) python3 tools/record_all.py --only ncu
# a stopped ncu run goes on where it stopped (record_ncu.py --resume), if there is time
grep -q "exit 0" <(tail -1 $OUT/ncu.log) || run ncu_resume $(( $(left) - 110 )) python3 tools/record_ncu.py --resume
run ceilings $(( $(left) > 130 ? 45 : $(left) - 85 )) python3 tools/record_all.py --only ceilings
run smem_cliff $(( $(left) > 110 ? 40 : $(left) - 70 )) python3 tools/record_all.py --only smem_cliff
run training $(( $(left) - 35 )) python3 tools/record_training.py --budget $(( $(left) - 60 ))
stamp pack
du -sh notebooks/traces/$SLUG/* 2>/dev/null
tar czf $OUT/replay_set.tar.gz notebooks/traces/$SLUG benchmarks/results/profiler_vs_do_bench_$SLUG.csv 2>&1 | tail -2
ls -la $OUT; echo "total $(( $(date +%s) - T0 )) s"

#!/usr/bin/env bash
# One GPU session, end to end: record the replay set, run the GPU tests, execute every notebook
# live. Run from the repo root on a CUDA machine; results go to ${OUT:-/tmp/gpu_session}.
#   bash benchmarks/gpu_session.sh
set -u
OUT=${OUT:-/tmp/gpu_session}
mkdir -p "$OUT/executed"
export PYTHONPATH=$PWD${PYTHONPATH:+:$PYTHONPATH} PYTHONUNBUFFERED=1
start=$(date +%s)

# hub_flash needs the Hub or a local kernel (python -m helpers.hub); record it separately
python3 -m helpers.record --sweep --stages naive inplace sdpa_math sdpa_efficient sdpa_flash sdpa_cudnn sdpa_auto naive_compiled flex 2>&1 | grep -v "Profiler clears events\|_warn_once" | tee "$OUT/record.log"
t_record=$(( $(date +%s) - start ))

# the GPU tests, and the table tests against the traces just recorded
timeout 420 python3 -m pytest -q -p no:cacheprovider -W ignore::UserWarning tests/test_profile.py tests/test_occupancy.py \
  tests/test_trace.py tests/test_lessons.py tests/test_kernel_names.py 2>&1 | tail -30 | tee "$OUT/pytest_gpu.log"
t_tests=$(( $(date +%s) - start - t_record ))

python3 - "$OUT" <<'PY' 2>&1 | tee "$OUT/notebooks.log"
import glob, sys, time, nbformat, nbclient
out = sys.argv[1]
total = time.time()
for path in sorted(glob.glob("notebooks/*.ipynb")):
    nb = nbformat.read(path, 4)
    t = time.time()
    try:
        nbclient.NotebookClient(nb, timeout=600, kernel_name="python3",
                                resources={"metadata": {"path": "notebooks"}}).execute()
        status = "ok"
    except Exception as err:  # keep going: one broken notebook must not hide the others
        status = f"FAILED: {str(err)[-1500:]}"
    nbformat.write(nb, f"{out}/executed/{path.split('/')[-1]}")
    print(f"{path:40s} {time.time() - t:6.1f} s  {status}", flush=True)
print(f"all notebooks: {time.time() - total:.1f} s")
PY
echo "record ${t_record} s, gpu tests ${t_tests} s, total $(( $(date +%s) - start )) s" | tee "$OUT/times.log"

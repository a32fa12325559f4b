#!/usr/bin/env bash
# One short call: the two changes made after call 2, checked live. (1) What a process's first
# profile costs against its second (what space/kernel_startup.py now pays ahead); (2) ncu with
# --target-processes application-only and one compile thread, on 07's three stages, empty caches.
T0=$(date +%s)
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/*.whl 2>&1 | tail -3
export PYTHONPATH=/tmp/site PATH=$PATH:/usr/local/cuda/bin ATTN_PROFILED_CACHE=/tmp/attn_cache PYTHONUNBUFFERED=1
nvidia-smi -L; rm -rf /tmp/attn_cache /tmp/torchinductor_* ~/.triton
python3 - <<'PY' 2>&1 | grep -v "Profiler clears"
import time, torch
from torch.profiler import profile, ProfilerActivity
torch.cuda.init(); x = torch.ones(1, device="cuda")
for i in (1, 2):
    t = time.perf_counter()
    with profile(activities=[ProfilerActivity.CPU, ProfilerActivity.CUDA]):
        x.add_(1); torch.cuda.synchronize()
    print(f"profile {i}: {time.perf_counter() - t:.2f} s")
PY
timeout 150 python3 - <<'PY' 2>&1 | tail -8
import time
from helpers import Session
s = Session()
t = time.perf_counter()
c = s.counters(["naive_compiled", "flex", "sdpa_auto"])
print("mode", c.mode, "on", c.gpu, f"{time.perf_counter() - t:.1f} s for", sorted(k for k, _ in c.kernels))
print("kernels:", {k: len(v) for k, v in c.kernels.items()})
PY
echo "total $(( $(date +%s) - T0 )) s"

#!/bin/bash
# One device call for issue 22: record the training replay set, then execute the chapter live.
# Run from the repository root on the GPU machine with $OUT set; packs $OUT/training.tar.gz.
set -u
START=$(date +%s)
mkdir -p "$OUT/executed"
nvidia-smi --query-gpu=name,memory.total,driver_version --format=csv,noheader > "$OUT/nvidia-smi.txt" 2>&1
python tools/record_training.py --budget "${RECORD_BUDGET:-330}" 2>&1 | tee "$OUT/record_training.log"
LEFT=$(( ${TOTAL_BUDGET:-500} - ($(date +%s) - START) - 25 ))
echo "notebook: ${LEFT}s left" | tee -a "$OUT/record_training.log"
if [ "$LEFT" -gt 40 ]; then
timeout "$LEFT" python - <<'PY' 2>&1 | tee "$OUT/notebook.log"
import sys, time, nbformat, nbclient, os
nb = nbformat.read("notebooks/11_training.ipynb", as_version=4)
t = time.perf_counter()
try:
    nbclient.NotebookClient(nb, timeout=300, kernel_name="python3", allow_errors=True,
                            resources={"metadata": {"path": "notebooks"}}).execute()
finally:
    nbformat.write(nb, os.path.join(os.environ["OUT"], "executed", "11_training.ipynb"))
errors = [o for c in nb.cells if c.cell_type == "code" for o in c.get("outputs", []) if o.get("output_type") == "error"]
print(f"11_training executed live in {time.perf_counter() - t:.0f} s, {len(errors)} errors")
for e in errors:
    print(e["ename"], e["evalue"][:500])
PY
fi
tar czf "$OUT/training.tar.gz" notebooks/traces/*/training benchmarks/results/training_step_*.csv 2>/dev/null
ls -la "$OUT" notebooks/traces/*/training
du -sh notebooks/traces/*/training

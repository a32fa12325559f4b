#!/usr/bin/env bash
# One call on the device: the whole book live, cold (fresh machine, empty caches, kernels pooled
# 3 ahead), with this GPU's replay set in the working tree; then the rest of that set (the
# training chapter's full recording, the "Your own model" experiments), then a warm pass if time is left.
T0=$(date +%s); DEADLINE=${DEADLINE:-570}
left() { echo $(( DEADLINE - ($(date +%s) - T0) )); }
stamp() { echo "== $1 at $(( $(date +%s) - T0 )) s, $(left) s left"; }
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/*.whl 2>&1 | tail -3
export PYTHONPATH=/tmp/site PATH=$PATH:/usr/local/cuda/bin ATTN_PROFILED_CACHE=/tmp/attn_cache PYTHONUNBUFFERED=1
{ date -u; nvidia-smi -L; python3 -c "import torch,triton,sys;print('python',sys.version.split()[0],'torch',torch.__version__,'cuda',torch.version.cuda,'cudnn',torch.backends.cudnn.version(),'triton',triton.__version__,torch.cuda.get_device_name(0))"; ncu --version | tail -1; python3 -c "import nbclient, ipykernel, plotly; print('nbclient', nbclient.__version__, 'ipykernel', ipykernel.__version__, 'plotly', plotly.__version__)"; git log -1 --format='%H %s'; git status --short | head -5; ls -d notebooks/traces/*/; } 2>&1 | tee $OUT/versions.log
S=/tmp/sess; mkdir -p $S
# cold: no cache of any kind, whether or not this machine ran something before
empty() { rm -rf /tmp/attn_cache /tmp/torchinductor_* /tmp/cold_compile_* ~/.triton ~/.cache/torch /tmp/attention_profiled; }
empty
pass() {   # pass NAME LIMIT
  [ "$2" -gt 20 ] || { echo "no time left for $1"; return; }
  stamp "pass $1 (limit $2 s)"
  POOL=3 KEEP_CACHE=1 NOTEBOOKS="notebooks/*.ipynb" STEPS=notebooks PASSES=$1 OUT=$S timeout $2 bash benchmarks/gpu_session.sh
  stamp "pass $1 done"
}
pass cold-pooled $(( $(left) - ${COLD_RESERVE:-200} ))
cp $S/notebooks_*.log $OUT/ 2>/dev/null
tar czf $OUT/executed_cold.tar.gz -C $S/executed cold-pooled 2>/dev/null
if [ "${REST:-1}" = 1 ]; then   # REST=0: the set is complete, record nothing
# the rest of this GPU's replay set: own_model's experiments with the machine's huggingface_hub
# (the kernels wheel brings one its transformers refuses), then the training chapter in full
SLUG=$(python3 -c "import torch; from helpers.core.replay_set import gpu_slug; print(gpu_slug(torch.cuda.get_device_name(0)))")
mkdir -p /tmp/site_own && cp -r /tmp/site/. /tmp/site_own/ && rm -rf /tmp/site_own/huggingface_hub*
stamp own_model
PYTHONPATH=/tmp/site_own timeout 60 python3 tools/record_own_model.py --only encoder_forward encoder_forward_slow encoder_train_step encoder_train_step_big hf_gpt2_forward encoder_forward_nosteps 2>&1 | tee $OUT/own_model.log | tail -20
B=$(( $(left) - 110 )); stamp "training (budget $B s)"
[ $B -gt 60 ] && timeout $(( B + 20 )) python3 tools/record_training.py --budget $B 2>&1 | grep --line-buffered -v "Profiler clears events\|_warn_once" | tee $OUT/training.log | tail -25
tar czf $OUT/replay_rest.tar.gz notebooks/traces/$SLUG/training notebooks/traces/$SLUG/own_model benchmarks/results/training_step_$SLUG.csv 2>&1 | tail -2
fi
pass warm-pooled $(( $(left) - ${COLD2_RESERVE:-25} ))
cp $S/notebooks_*.log $OUT/ 2>/dev/null
tar czf $OUT/executed_warm.tar.gz -C $S/executed warm-pooled 2>/dev/null
# COLD2_RESERVE set: a second cold pass on the same machine, every cache emptied again (its spread)
if [ -n "${COLD2_RESERVE:-}" ] && [ "$(left)" -gt 200 ]; then
  empty; pass cold2-pooled $(( $(left) - 15 ))
  tar czf $OUT/executed_cold2.tar.gz -C $S/executed cold2-pooled 2>/dev/null
  cp $S/notebooks_*.log $OUT/ 2>/dev/null
fi
ls -la $OUT; echo "total $(( $(date +%s) - T0 )) s"

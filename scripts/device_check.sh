#!/usr/bin/env bash
# Device check for a GPU machine, under 5 minutes: the scaling bench on the visible GPUs, then the
# loader benches (the segmentation one again with DALI on the GPU, where DALI is installed: see the
# README's dali section). Every step has its own time limit, and a failed step does not stop the others.
#
#   scripts/device_check.sh                 # JSON results in $OUT, or reports/device/
#   PYTHON=/path/to/python scripts/device_check.sh
#
# Needs a Python with TensorFlow (a GPU build) and kit's dependencies; it runs kit from this
# checkout (python -m kit from the repository root), nothing is downloaded.
set -uo pipefail
cd "$(dirname "$0")/.."
if [[ -z "${PYTHON:-}" ]]; then
  if [[ -x .venv/bin/python ]]; then PYTHON=.venv/bin/python; else PYTHON=python3; fi
fi
OUT="${OUT:-reports/device}"
mkdir -p "$OUT"
export TF_CPP_MIN_LOG_LEVEL=2
START=$SECONDS
failed=0

step() {  # step SECONDS NAME COMMAND...: runs one check under a time limit, logs to $OUT/NAME.log
  local limit=$1 name=$2; shift 2
  echo "== $name (limit ${limit}s, at $((SECONDS - START))s)"
  if timeout --kill-after=5 "$limit" "$@" > >(tee "$OUT/$name.log") 2>"$OUT/$name.err"; then
    echo "   ok"
  else
    echo "   FAILED (status $?); last lines of $OUT/$name.err:"; tail -n 5 "$OUT/$name.err"; failed=$((failed + 1))
  fi
}

if ! GPUS=$("$PYTHON" -c 'import tensorflow as tf; print(len(tf.config.list_physical_devices("GPU")))' 2>/dev/null); then
  echo "device_check: $PYTHON cannot import tensorflow; set PYTHON to an environment with kit's dependencies" >&2
  exit 3
fi
nvidia-smi --query-gpu=name,memory.total,driver_version --format=csv,noheader 2>/dev/null | tee "$OUT/gpus.txt" || true
echo "TensorFlow sees $GPUS GPU(s)"
REPLICAS=1
for n in 2 4 8; do if (( GPUS >= n )); then REPLICAS="$REPLICAS,$n"; fi; done

# Smaller bench data than the benches' defaults, so that everything fits in 5 minutes.
DATA="${DATA:-${TMPDIR:-/tmp}/kit-device-check}"
export KIT_CACHE="${KIT_CACHE:-$DATA/cache}"
step 40 data sh -c "'$PYTHON' -m kit samples spectrogram --out '$DATA/spectrogram' --files 50 --frames-per-file 100 \
  && '$PYTHON' -m kit samples segmentation --out '$DATA/segmentation' --images 48 --size 512"

if (( GPUS > 0 )); then
  # Compute-heavy model, data in memory: how the replicas themselves scale.
  step 70 scaling_gpu_in_memory "$PYTHON" -m kit bench scaling --replicas "$REPLICAS" --devices gpu \
    --csv "$DATA/spectrogram/index.csv" --variant in_memory --model conv --width 8 --per-replica-batch 256 \
    --steps 30 --rounds 3 --json "$OUT/scaling_gpu_in_memory.json"
  # The user's case: a light head fed by the user's generator; the loader is the ceiling.
  step 35 scaling_gpu_generator "$PYTHON" -m kit bench scaling --replicas "$REPLICAS" --devices gpu \
    --csv "$DATA/spectrogram/index.csv" --variant generator --model head --per-replica-batch 128 \
    --steps 8 --rounds 2 --json "$OUT/scaling_gpu_generator.json"
else
  echo "no GPU visible: skipping the GPU scaling runs"
fi
# The same code path on logical CPU devices (a simulation), to compare with the CI machine.
step 30 scaling_cpu_simulated "$PYTHON" -m kit bench scaling --replicas 1,2 --devices cpu \
  --csv "$DATA/spectrogram/index.csv" --variant in_memory --model conv --per-replica-batch 32 \
  --steps 20 --rounds 2 --json "$OUT/scaling_cpu_simulated.json"
# The loader benches (the host side: they use the machine's CPUs and disk, not the GPU).
step 55 bench_spectrogram "$PYTHON" -m kit bench spectrogram --data "$DATA/spectrogram/index.csv" \
  --rounds 2 --batches 20 --json "$OUT/bench_spectrogram.json"
step 40 bench_segmentation "$PYTHON" -m kit bench segmentation --data "$DATA/segmentation/index.csv" \
  --variants sequence,sequence_workers,tfdata_naive,tfdata_tuned,class_index \
  --rounds 2 --batches 2 --seconds 2 --slow-seconds 4 --json "$OUT/bench_segmentation.json"
# The dali variant: decode, colour lookup and crop on the GPU when one is visible (never measured on a
# GPU before this script's first run there), beside tfdata_tuned and class_index in one run.
if DALI_WHY=$("$PYTHON" -c 'from kit.segmentation.dali import available; w = available(); print(w or ""); raise SystemExit(w is not None)' 2>/dev/null); then
  step 60 bench_segmentation_dali "$PYTHON" -m kit bench segmentation --data "$DATA/segmentation/index.csv" \
    --variants tfdata_tuned,class_index,dali --rounds 2 --batches 20 --seconds 3 \
    --json "$OUT/bench_segmentation_dali.json"
else
  echo "dali: skipped: ${DALI_WHY:-kit.segmentation.dali did not import}"
fi

echo "== done in $((SECONDS - START))s, $failed step(s) failed; results in $OUT/"
exit $(( failed > 0 ))

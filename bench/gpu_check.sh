#!/usr/bin/env bash
# One prepared device check (issue 54, item 5): everything a GPU machine should run, in one call of at most
# --budget-s seconds (default 530: under the device's 9-minute call with time to pack), written to ONE archive,
# $OUT/gpu_check.tar.gz (OUT: the device's output folder; a temporary folder when unset).
#
#   bash bench/gpu_carry.sh runs/gpu-carry                 # here: wheels + Fashion-MNIST into a git-ignored folder
#   bash bench/gpu_check.sh --carry runs/gpu-carry         # on the device (carry: runs/gpu-carry)
#   bash bench/gpu_check.sh --device cpu --tiny --budget-s 240    # the rehearsal on a CPU (tests/runs/test_gpu_check.py)
#
# Steps, each under `timeout` and the budget left, each logged to its own file; a failing step is recorded
# (steps.txt: name, exit status, seconds) and the next one runs:
#   1. install  simpy, pydantic, pydantic-core, annotated-types, typing-inspection from CARRY/wheels into a
#               folder of this check (nothing of the image is changed), only when they do not import already
#   2. data     CARRY/fashion-mnist if it holds the IDX files, else $SFL_SIM_FASHION_MNIST_DIR, else Debian's
#   3. env      nvidia-smi, torch and CUDA versions, the cores
#   4. tests    python -m pytest -m cuda tests/runs/test_cuda.py but the 20-round statistical comparison
#               (on a CPU every one of them skips)
#   5. bench    bench/gpu.py (host time a round, GPU utilisation and memory: default and paper scenarios), then
#               bench/feddyn.py on the paper's scenario (FedDyn / FedAvg host time, the target <= 1.3)
#   6. headline studies/paper_headline.yaml cut to --headline-rounds (default 80; at most 150 s, all 12 runs
#               at once on the one GPU; runs cut by the limit count with the rounds they reached), then
#               bench/headline.py's table beside the paper's Table 4
#   7. tests    the 20-round statistical CUDA-vs-CPU comparison, with the budget left
set -u
DEVICE=cuda
CARRY=runs/gpu-carry
BUDGET=530
TINY=0
HEADLINE_ROUNDS=80
while [ $# -gt 0 ]; do
    case "$1" in
        --device) DEVICE=$2; shift 2 ;;
        --carry) CARRY=$2; shift 2 ;;
        --budget-s) BUDGET=$2; shift 2 ;;
        --headline-rounds) HEADLINE_ROUNDS=$2; shift 2 ;;
        --tiny) TINY=1; shift ;;
        *) echo "gpu_check.sh: unknown argument $1; allowed: --device cpu|cuda, --carry DIR, --budget-s N, --headline-rounds N, --tiny" >&2; exit 2 ;;
    esac
done
case "$DEVICE" in cpu|cuda) ;; *) echo "--device: got $DEVICE; allowed: cpu, cuda" >&2; exit 2 ;; esac
ROOT=$(cd "$(dirname "$0")/.." && pwd)
cd "$ROOT"
OUT=${OUT:-$(mktemp -d)}
mkdir -p "$OUT"
WORK=$(mktemp -d)/gpu_check
mkdir -p "$WORK"
PY=${PYTHON:-python}
export PYTHONPATH="$ROOT${PYTHONPATH:+:$PYTHONPATH}"
PACK_S=20   # kept back for packing the archive
echo "device $DEVICE, budget ${BUDGET} s, tiny $TINY, carry $CARRY, started $(date -u +%FT%TZ)" > "$WORK/steps.txt"

left() { echo $(( BUDGET - PACK_S - SECONDS )); }
# step NAME CAP_S COMMAND...: run COMMAND under min(CAP_S, budget left), output to NAME.txt, status to steps.txt
step() {
    local name=$1 cap=$2; shift 2
    local limit; limit=$(left)
    [ "$cap" -lt "$limit" ] && limit=$cap
    if [ "$limit" -le 5 ]; then
        echo "$name skipped (budget spent)" >> "$WORK/steps.txt"; return 0
    fi
    local start=$SECONDS
    timeout --kill-after=5 "$limit" "$@" > "$WORK/$name.txt" 2>&1
    local rc=$?
    echo "$name rc=$rc $(( SECONDS - start )) s (limit $limit s)" >> "$WORK/steps.txt"
    return 0
}

# 1. install what the image lacks, into this check's own folder
if "$PY" -c "import simpy, pydantic, annotated_types, typing_inspection" 2>/dev/null; then
    echo "install skipped (all import)" >> "$WORK/steps.txt"
else
    step install 120 "$PY" -m pip install --no-index --find-links "$CARRY/wheels" --target "$WORK/site" \
        simpy pydantic annotated-types typing-inspection
    export PYTHONPATH="$PYTHONPATH:$WORK/site"
fi

# 2. the data
if [ -f "$CARRY/fashion-mnist/train-images-idx3-ubyte.gz" ]; then
    export SFL_SIM_FASHION_MNIST_DIR=$(cd "$CARRY/fashion-mnist" && pwd)
elif [ -z "${SFL_SIM_FASHION_MNIST_DIR:-}" ]; then
    export SFL_SIM_FASHION_MNIST_DIR=/usr/share/datasets/fashion-mnist
fi
echo "data $SFL_SIM_FASHION_MNIST_DIR" >> "$WORK/steps.txt"

# 3. the machine
step env 30 bash -c "nproc; (nvidia-smi || echo 'no nvidia-smi'); $PY -c 'import torch, simpy, pydantic; print(\"torch\", torch.__version__, \"cuda\", torch.version.cuda, \"available\", torch.cuda.is_available()); print(\"simpy\", simpy.__version__, \"pydantic\", pydantic.VERSION)'"

# 4. the CUDA tests (skipped on a CPU)
PYTEST=("$PY" -m pytest -p no:cacheprovider -p no:xdist -q -m cuda tests/runs/test_cuda.py)
step tests_fast 150 "${PYTEST[@]}" -k "not longer_runs"

# 5. the benches
if [ "$TINY" = 1 ]; then
    step bench_gpu 120 "$PY" bench/gpu.py --device "$DEVICE" --rounds 1 --local-iterations 1 \
        --scenarios cellular_100clients --algorithms scala fedavg
    step bench_feddyn 120 "$PY" bench/feddyn.py --device "$DEVICE" --rounds 1 --local-iterations 1
else
    step bench_gpu 90 "$PY" bench/gpu.py --device "$DEVICE"
    step bench_feddyn 60 "$PY" bench/feddyn.py --device "$DEVICE" --scenario cellular_100clients_paper \
        --rounds 5 --local-iterations 5
fi

# 6. the headline, cut to fit
"$PY" - "$WORK/headline.yaml" "$DEVICE" "$HEADLINE_ROUNDS" "$TINY" <<'PYEOF' >> "$WORK/steps.txt" 2>&1
import sys
import yaml
path, device, rounds, tiny = sys.argv[1], sys.argv[2], int(sys.argv[3]), sys.argv[4] == "1"
study = yaml.safe_load(open("studies/paper_headline.yaml"))
study["set"].update({"rounds": rounds, "device": device})
study.pop("output_dir", None)
if tiny:  # a rehearsal of the plumbing, not of the numbers
    study["seeds"] = [0]
    study["set"].update({"rounds": 1, "eval_every_rounds": 1, "eval_samples": 100,
                         "model.params": {"conv_channels": [8, 8, 8, 8, 8], "fc_features": [16, 16]},
                         "data.dataset.max_train_samples": 2000, "clients.count": 10,
                         "training.local_iterations": 1})
yaml.safe_dump(study, open(path, "w"))
print(f"headline cut: seeds {study['seeds']}, set {study['set']}")
PYEOF
WORKERS=12
[ "$DEVICE" = cpu ] && WORKERS=1
step headline 150 "$PY" -m sfl_sim study "$WORK/headline.yaml" -o "$WORK/headline" --workers "$WORKERS" --no-progress
step headline_table 15 "$PY" bench/headline.py "$WORK/headline"

# 7. the statistical CUDA-vs-CPU comparison (20 rounds x 3 seeds x 2 devices x 2 algorithms) with what is left
step tests_long 240 "${PYTEST[@]}" -k "longer_runs"

# pack: the logs and the run directories' small files (no checkpoints, work logs or per-client rows)
echo "finished $(date -u +%FT%TZ), $SECONDS s" >> "$WORK/steps.txt"
tar -czf "$OUT/gpu_check.tar.gz" -C "$(dirname "$WORK")" --exclude='*.pt' --exclude='work.jsonl.gz' \
    --exclude='clients.csv' --exclude='site' gpu_check
cat "$WORK/steps.txt"
rm -rf "$(dirname "$WORK")"   # this check's own temporary folder (made by mktemp above)
echo "archive: $OUT/gpu_check.tar.gz"

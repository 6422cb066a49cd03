#!/usr/bin/env bash
# Prepare, on this machine, what bench/gpu_check.sh needs on a device machine that has torch, numpy, scipy,
# pandas, matplotlib, pyyaml, tqdm and pytest but not sfl-sim's other dependencies, and no network:
#   DIR/wheels/        simpy, pydantic, pydantic-core (binary: one wheel per Python 3.10-3.13), annotated-types,
#                      typing-inspection, typing-extensions -- the versions installed here, so the device runs
#                      what was tested here
#   DIR/fashion-mnist/ the four IDX .gz files of Fashion-MNIST (about 30 MB)
# DIR defaults to runs/gpu-carry (git-ignored: hand it to the device as a carried path).
#   bash bench/gpu_carry.sh [DIR]
#   then, on the device:  bash bench/gpu_check.sh --carry runs/gpu-carry
set -euo pipefail
DIR=${1:-runs/gpu-carry}
PY=${PYTHON:-python}
DATA=${SFL_SIM_FASHION_MNIST_DIR:-/usr/share/datasets/fashion-mnist}
mkdir -p "$DIR/wheels" "$DIR/fashion-mnist"
version() { "$PY" -c "import importlib.metadata as m; print(m.version('$1'))"; }
pure=()
for pkg in simpy pydantic annotated-types typing-inspection typing-extensions; do
    pure+=("$pkg==$(version "$pkg")")
done
"$PY" -m pip download --quiet --no-deps --only-binary=:all: --dest "$DIR/wheels" "${pure[@]}"
core="pydantic-core==$(version pydantic_core)"
for v in 3.10 3.11 3.12 3.13; do
    "$PY" -m pip download --quiet --no-deps --only-binary=:all: --dest "$DIR/wheels" \
        --python-version "$v" --implementation cp --platform manylinux2014_x86_64 "$core" \
        || echo "note: no $core wheel for Python $v" >&2
done
for f in train-images-idx3-ubyte.gz train-labels-idx1-ubyte.gz t10k-images-idx3-ubyte.gz t10k-labels-idx1-ubyte.gz; do
    cp "$DATA/$f" "$DIR/fashion-mnist/$f"
done
du -sh "$DIR"/wheels "$DIR"/fashion-mnist
ls "$DIR/wheels"

#!/usr/bin/env bash
# gpu-check.sh: the checks of issue 20 on a machine with an NVIDIA GPU, the CUDA toolkit
# (nvcc) and Go. It prints, in order:
#   1. `flops-worker inventory`: what NVML reports (model, UUIDs, memory, compute
#      capability, MIG mode);
#   2. the GPU solver built by `make gpu-solver`, checked entry by entry and root by root
#      against the Go CPU solver (a BUILTIN GEMM job's result root is the Merkle root of
#      this product: equal roots are equal job results), on one GPU and spread over all of
#      them in bands of rows as the worker does;
#   3. `flops-worker benchmark`, CPU solver vs GPU solver (pocp.solver auto), in GFLOP/s;
#   4. PoCP on the GPUs through a real chain (tests/e2e TestGPUPoCPMeasuredPower): a worker
#      on the GPUs answers challenges sized for 20 s; the chain's measured power against
#      the solver's own on the same size, and the class the launch floors give the node.
# Nothing in CI runs it. Usage: scripts/gpu-check.sh [sizes, default 1024,4096,8192,16384]
set -euo pipefail
cd "$(dirname "$0")/.."

SIZES=${1:-1024,4096,8192,16384}
command -v nvidia-smi >/dev/null || { echo "gpu-check: nvidia-smi not found: no NVIDIA driver" >&2; exit 1; }
command -v nvcc >/dev/null || { echo "gpu-check: nvcc not found: install the CUDA toolkit" >&2; exit 1; }

echo "== nvidia-smi"
nvidia-smi --query-gpu=name,uuid,memory.total,compute_cap,mig.mode.current --format=csv

echo "== build"
make --no-print-directory build >/dev/null
make --no-print-directory gpu-solver

echo "== flops-worker inventory"
build/flops-worker inventory

UUIDS=$(nvidia-smi --query-gpu=uuid --format=csv,noheader | paste -sd, -)
echo "== GPU solver vs Go solver, one GPU (sizes $SIZES)"
go run ./tools/gpu-solver/check -solver build/flops-gpu-solver -sizes "$SIZES" -r 1
if [ "$(echo "$UUIDS" | tr ',' '\n' | wc -l)" -gt 1 ]; then
  echo "== GPU solver vs Go solver, spread over $UUIDS"
  go run ./tools/gpu-solver/check -solver build/flops-gpu-solver -sizes "$SIZES" -r 1 -devices "$UUIDS"
fi

echo "== flops-worker benchmark: CPU solver"
build/flops-worker benchmark --solver go --n 1024,2048
echo "== flops-worker benchmark: GPU solver (pocp.solver auto, all GPUs)"
build/flops-worker benchmark --solver auto --n 4096,8192,16384

echo "== PoCP on the GPUs through a chain: measured vs the solver's own"
FLOPS_GPU_TESTS=1 FLOPS_GPU_SOLVER="$PWD/build/flops-gpu-solver" \
  go test -tags flopscheat -count=1 -v -timeout 20m -run TestGPUPoCPMeasuredPower ./tests/e2e/ | grep -E 'gpu_test.go|^(---|ok|FAIL)'

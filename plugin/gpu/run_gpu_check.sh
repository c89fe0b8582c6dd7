#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# GPU check of the ODL plugin on one host with two GPUs: torch.distributed
# all_reduce/all_gather 8 B-256 MiB through NCCL's NET transport, first over
# the ODL plugin (loopback backend), then over NCCL's Socket transport.
# Usage: plugin/gpu/run_gpu_check.sh <dir with libnccl-net-odl.so> [out dir]
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
plugdir=$(cd "${1:?usage: $0 <plugin dir> [out dir]}" && pwd)
out=${2:-${OUT:-/tmp/odl-gpu-check}}
mkdir -p "$out"
status=0

python3 - <<'PY' | tee "$out/versions.txt"
import glob, os, re, torch
print("torch", torch.__version__, "NCCL", ".".join(map(str, torch.cuda.nccl.version())))
print("GPUs:", torch.cuda.device_count(), torch.cuda.get_device_name(0))
libs = glob.glob(os.path.join(os.path.dirname(torch.__file__), "..", "nvidia", "nccl", "lib", "libnccl.so*"))
for lib in libs:
    syms = sorted(set(m.decode() for m in re.findall(rb"ncclNetPlugin_v[0-9]+", open(lib, "rb").read())))
    print(os.path.realpath(lib), "asks for:", " ".join(syms))
PY

# Only the NET transport may carry data between the two GPUs; no NVLink multicast.
export NCCL_P2P_DISABLE=1 NCCL_SHM_DISABLE=1 NCCL_NVLS_ENABLE=0
export TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1
export NCCL_DEBUG=INFO NCCL_DEBUG_SUBSYS=INIT,NET
export ODL_LOOPBACK_NAMESPACE=gpucheck-$$ ODL_RUNTIME_DIR="$out/runtime"

run() {  # transport, then extra environment
    local transport=$1
    shift
    echo "== $transport"
    if ! env "$@" torchrun --standalone --nproc_per_node=2 "$here/allreduce_check.py" \
        --transport "$transport" --out "$out/$transport.json" >"$out/$transport.log" 2>&1; then
        echo "FAIL: $transport run failed; last lines of $out/$transport.log:"
        tail -30 "$out/$transport.log"
        status=1
    fi
    grep -E "^$transport " "$out/$transport.log" || true
}

echo "ODL_NCCL_DEVICES=${ODL_NCCL_DEVICES:-(plugin default)}"
run ODL NCCL_NET_PLUGIN="$plugdir/libnccl-net-odl.so" NCCL_NET=ODL \
    LD_LIBRARY_PATH="$plugdir:${LD_LIBRARY_PATH:-}"
# Proof that NCCL loaded and used the plugin, not a fallback.
for pat in "Loaded net plugin ODL" "Using network ODL" "via NET/ODL"; do
    if grep -q "$pat" "$out/ODL.log"; then
        echo "log has: $(grep -m1 "$pat" "$out/ODL.log" | sed 's/^.*NCCL INFO //')"
    else
        echo "FAIL: NCCL log lacks '$pat'"
        status=1
    fi
done
run Socket NCCL_NET=Socket NCCL_NET_PLUGIN=none
grep -m1 "via NET/Socket" "$out/Socket.log" >/dev/null || { echo "FAIL: Socket run did not use NET/Socket"; status=1; }

if [[ -f $out/ODL.json && -f $out/Socket.json ]]; then
    python3 "$here/compare.py" "$out/ODL.json" "$out/Socket.json" | tee "$out/table.md" || status=1
else
    status=1
fi
exit $status

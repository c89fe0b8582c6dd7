#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# Quick ODL-only sweep over ODL_NCCL_DEVICES settings (lanes): all_reduce at
# >= 16 MiB, every result checked. Same NET-only environment as
# run_gpu_check.sh. Usage: plugin/gpu/lane_sweep.sh <plugin dir> <out dir> SPEC...
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
plugdir=$(cd "${1:?usage}" && pwd)
out=${2:?usage}
shift 2
mkdir -p "$out"
export NCCL_P2P_DISABLE=1 NCCL_SHM_DISABLE=1 NCCL_NVLS_ENABLE=0
export TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1
export NCCL_DEBUG=INFO NCCL_DEBUG_SUBSYS=INIT,NET
export NCCL_NET_PLUGIN="$plugdir/libnccl-net-odl.so" NCCL_NET=ODL
status=0
for spec in "$@"; do
    tagname=${spec//[:,]/_}
    echo "== ODL_NCCL_DEVICES=$spec"
    if ! ODL_NCCL_DEVICES=$spec ODL_LOOPBACK_NAMESPACE=sweep-$$-$tagname ODL_RUNTIME_DIR="$out/runtime-$tagname" \
        torchrun --standalone --nproc_per_node=2 "$here/allreduce_check.py" --transport "ODL[$spec]" \
        --out "$out/$tagname.json" --min-size $((16 << 20)) --ops all_reduce >"$out/$tagname.log" 2>&1; then
        echo "FAIL: see $out/$tagname.log"; tail -20 "$out/$tagname.log"; status=1
    fi
    grep -E "^ODL\[" "$out/$tagname.log" || true
    grep -c "via NET/ODL" "$out/$tagname.log" | sed 's/^/channels via NET\/ODL: /' || true
done
exit $status

#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# Real NCCL on a modelled link: torch.distributed all_reduce/all_gather
# between two ranks on ONE GPU (each its own NCCL host, so every byte goes
# through the ODL plugin), the plugin on libodl's sim backend, the link
# modelled by odl-linkd --sim. Every result is checked exactly; no size may
# run faster than the modelled cable carries (the pacing is the model's);
# the plugin's "model timing" lines say whether the model kept up. The same
# job over the unpaced loopback backend (in frames: no single-copy
# rendezvous) runs beside it for comparison, then
# over NCCL's own Socket transport (TCP over this host's loopback interface,
# no plugin: what NCCL does without OdinLink, with no cable in the way), and
# the model's own prediction for a ring of two on the same hosts and cable
# (odl model predict, no GPU) beside them, alone and bound by this host's own
# NCCL path (host_bound.py).
#
# Usage: plugin/gpu/run_sim_check.sh <plugin dir> <odl-linkd> [out dir] [-- odl-linkd options]
#   default odl-linkd options: --gen gen4 --lanes 2 (TB5); e.g. -- --gen gen3 --lanes 2 (TB4)
# Environment: MAX_SIZE (default 64 MiB), TRAFFIC (bytes per size, default 256 MiB),
#   SIM_DEVICES / LO_DEVICES (default sim:0 / loopback:0; with -- --links 2, e.g.
#   sim:0-1 and loopback:0-1: one NCCL device striped over two modelled links).
#   ODL_MODEL_BIN: odl-model for the model's own prediction column (default: beside
#   odl-linkd, the build tree's bin/, or PATH). SOCKET=0 leaves out the Socket run.
# Two processes on one GPU take turns on it (time slices of milliseconds, so
# every small collective took 2.25-4.5 ms) unless CUDA MPS runs: the script
# starts a private MPS daemon when nvidia-cuda-mps-control is there, and says
# so when it is not.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
plugdir=$(cd "${1:?usage: $0 <plugin dir> <odl-linkd> [out dir] [-- linkd options]}" && pwd)
linkd=${2:?usage: $0 <plugin dir> <odl-linkd> [out dir] [-- linkd options]}
shift 2
out=${OUT:-/tmp/odl-gpu-sim}
if [[ $# -gt 0 && $1 != -- ]]; then out=$1; shift; fi
[[ ${1:-} == -- ]] && shift
cable=("$@")
[[ ${#cable[@]} -gt 0 ]] || cable=(--gen gen4 --lanes 2)
mkdir -p "$out"
status=0

export NCCL_P2P_DISABLE=1 NCCL_SHM_DISABLE=1 NCCL_NVLS_ENABLE=0
export TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1
export NCCL_DEBUG=INFO NCCL_DEBUG_SUBSYS=INIT,NET
export ODL_RUNTIME_DIR="$out/runtime" ODL_LOOPBACK_NAMESPACE=gpusim-$$
export ODL_SIM_SOCKET="$out/sim.sock" SYSTEMC_DISABLE_COPYRIGHT_MESSAGE=1
rm -f "$ODL_SIM_SOCKET"

mps=
if command -v nvidia-cuda-mps-control >/dev/null; then
    export CUDA_MPS_PIPE_DIRECTORY="$out/mps-pipe" CUDA_MPS_LOG_DIRECTORY="$out/mps-log"
    mkdir -p "$CUDA_MPS_PIPE_DIRECTORY" "$CUDA_MPS_LOG_DIRECTORY"
    nvidia-cuda-mps-control -d && mps=1
fi
[[ -n $mps ]] && echo "CUDA MPS: on (both ranks' kernels run at once)" ||
    echo "CUDA MPS: not available: the two ranks take turns on the GPU, small collectives take milliseconds"

"$linkd" --sim --socket "$ODL_SIM_SOCKET" "${cable[@]}" >"$out/linkd.log" 2>&1 &
server=$!
trap 'kill $server 2>/dev/null || true; wait $server 2>/dev/null || true; if [[ -n $mps ]]; then echo quit | nvidia-cuda-mps-control || true; fi' EXIT
for _ in $(seq 100); do [[ -S $ODL_SIM_SOCKET ]] && break; sleep 0.1; done
[[ -S $ODL_SIM_SOCKET ]] || { echo "FAIL: odl-linkd --sim did not start: $(cat "$out/linkd.log")"; exit 1; }
# One link: "(..., N Mb/s each way, ...)"; several: a "sim device K: ..., N Mb/s A to B"
# line each. The cap below is what all the links carry together.
for _ in $(seq 50); do grep -q -e "serving the sim backend" -e "sim device 0:" "$out/linkd.log" && break; sleep 0.1; done
# The banner, not the pipeline fit's report that -v logs before it.
banner=$(grep -m1 "serving the sim backend" "$out/linkd.log" || head -n1 "$out/linkd.log")
links=$(grep -c "sim device [0-9]*:" "$out/linkd.log" || true)
if [[ $links -gt 0 ]]; then
    rate_mbps=$(sed -n 's/.*sim device 0: .*, \([0-9]*\) Mb\/s A to B.*/\1/p' "$out/linkd.log")
    rate_mbps=$((rate_mbps * links))
else
    # "N Mb/s each way", or an asymmetric cable's "N Mb/s A to B, M Mb/s B to A": the faster.
    rate_mbps=$(grep -o '[0-9]* Mb/s' <<<"$banner" | sort -n | tail -n 1 | cut -d' ' -f1)
fi
[[ -n $rate_mbps && $rate_mbps -gt 0 ]] || { echo "FAIL: no link rate in: $(cat "$out/linkd.log")"; exit 1; }
echo "link: ${banner#*(}"
grep "sim device [0-9]*:" "$out/linkd.log" || true

run() {  # name, devices ("" for NCCL's Socket transport)
    local name=$1 devices=$2 net=ODL
    local what="ODL_NCCL_DEVICES=$devices"
    local -a envs=(NCCL_NET_PLUGIN="$plugdir/libnccl-net-odl.so" NCCL_NET=ODL ODL_NCCL_DEVICES="$devices"
        LD_LIBRARY_PATH="$plugdir:${LD_LIBRARY_PATH:-}")
    # No plugin at all, and the loopback interface for both the bootstrap and
    # the data: the two "hosts" share this machine.
    if [[ -z $devices ]]; then
        net=Socket what="NCCL_NET=Socket over lo"
        envs=(NCCL_NET=Socket NCCL_NET_PLUGIN=none NCCL_SOCKET_IFNAME=lo)
    fi
    echo "== $name ($what)"
    if ! env "${envs[@]}" \
        torchrun --standalone --nproc_per_node=2 "$here/allreduce_check.py" --one-gpu \
        --max-size "${MAX_SIZE:-67108864}" --traffic "${TRAFFIC:-268435456}" \
        --transport "$name" --out "$out/$name.json" >"$out/$name.log" 2>&1; then
        echo "FAIL: $name run failed; last lines of $out/$name.log:"
        tail -30 "$out/$name.log"
        status=1
    fi
    grep -q "via NET/$net" "$out/$name.log" || { echo "FAIL: $name: no channel via NET/$net"; status=1; }
}

run sim "${SIM_DEVICES:-sim:0}"
# What the plugin said about the model's timing, per rank (WARN: some frames
# were late, so the times below are slower than the modelled link's).
timing=$(grep -h "model timing" "$out/sim.log" | sed 's/^.*NET\/ODL : //' || true)
[[ -n $timing ]] || { echo "FAIL: the plugin reported no model timing"; status=1; }
echo "$timing"
kill $server 2>/dev/null
wait $server 2>/dev/null || true
# In frames, as over sim: no single-copy rendezvous (a large message read
# straight from the other rank's memory), so this is the same path without
# the link model and its server.
ODL_LOOPBACK_RNDV=0 run loopback "${LO_DEVICES:-loopback:0}"
rm -f "$out/socket.json"
[[ ${SOCKET:-1} == 0 ]] || run socket ""

[[ -f $out/sim.json && -f $out/loopback.json ]] || exit 1
[[ ${SOCKET:-1} == 0 || -f $out/socket.json ]] || exit 1

# The model's own prediction for the same hosts and cable without GPUs or
# NCCL: a ring of two (`odl model predict`), size by size.
model_note=
model_bin=${ODL_MODEL_BIN:-}
for c in "$(dirname "$linkd")/odl-model" "$(dirname "$linkd")/../../../bin/odl-model" "$(command -v odl-model || true)"; do
    [[ -z $model_bin && -n $c && -x $c ]] && model_bin=$c
done
gen=gen4 lanes=2 asym= profile=intel-tb5-discrete nlinks=1
for ((i = 0; i < ${#cable[@]}; i++)); do
    case ${cable[i]} in
    --gen) gen=${cable[i + 1]} ;;
    --lanes) lanes=${cable[i + 1]} ;;
    --asymmetric) asym=1 ;;
    --profile) profile=${cable[i + 1]} ;;
    --links) nlinks=${cable[i + 1]} ;;
    --scenario) model_note="a scenario's link" ;;
    esac
done
case $gen:$lanes:$asym in
gen3:2:) mgen=tb4 ;; gen4:2:) mgen=tb5 ;; gen4:2:1) mgen=tb5-asym ;;
*) model_note="odl model predict models TB4, TB5 and TB5-asymmetric (x2) cables, not $gen x$lanes" ;;
esac
[[ $nlinks == 1 ]] || model_note="$nlinks links: odl model predict models a ring of two over one cable"
[[ -n $model_bin || -n $model_note ]] || model_note="no odl-model (ODL_MODEL_BIN)"
if [[ -z $model_note ]]; then
    sizes=$(python3 -c 'import json,sys; print(",".join(sorted({str(r["size"]) for r in json.load(open(sys.argv[1]))["rows"]}, key=int)))' "$out/sim.json")
    "$model_bin" model predict --generations "$mgen" --platform "$profile" --hosts 2 --sizes "$sizes" --json \
        >"$out/model.json" 2>"$out/model.log" || model_note="odl model predict failed: $(tail -n 1 "$out/model.log")"
fi
[[ -z $model_note ]] && echo "model: odl model predict --generations $mgen --platform $profile --hosts 2" ||
    echo "model: no prediction column: $model_note"

python3 - "$out/sim.json" "$out/loopback.json" "$rate_mbps" "$out/model.json" "$model_note" "$out/socket.json" \
    <<'PY' | tee "$out/table.md" || status=1
import json, os, sys
sim, lo = (json.load(open(p)) for p in sys.argv[1:3])
sock = json.load(open(sys.argv[6])) if os.path.exists(sys.argv[6]) else None
rate_GBps = int(sys.argv[3]) / 8000.0
model = {}
if not sys.argv[5] and os.path.exists(sys.argv[4]):
    for c in json.load(open(sys.argv[4]))["collectives"]:
        model[({"allreduce": "all_reduce", "allgather": "all_gather"}[c["kind"]], c["size_bytes"])] = c
print(f"two ranks on one {sim['gpu']}, torch {sim['torch']}, NCCL {sim['nccl']}; "
      f"modelled link(s) {rate_GBps:.2f} GB/s each way in all\n")
print("| op | size | sim: time | sim: busbw | model: time | model: busbw | busbw sim/model "
      "| loopback: time | loopback: busbw | Socket (lo): time | Socket (lo): busbw |")
print("|---|---|---|---|---|---|---|---|---|---|---|")
lo_rows = {(r["op"], r["size"]): r for r in lo["rows"]}
sock_rows = {(r["op"], r["size"]): r for r in sock["rows"]} if sock else {}
def cells(x):
    return f"{x['time_us']:.1f} us | {x['busbw_GBps']:.3f} GB/s |" if x else "- | - |"
bad = 0
for r in sim["rows"]:
    key = (r["op"], r["size"])
    m = model.get(key)
    print(f"| {r['op']} | {r['size']} | {r['time_us']:.1f} us | {r['busbw_GBps']:.3f} GB/s | "
          + (f"{m['time_us']:.1f} us | {m['busbw_gbps'] / 8:.3f} GB/s | {m['time_us'] / r['time_us']:.2f} | " if m else "- | - | - | ")
          + cells(lo_rows.get(key)) + " " + cells(sock_rows.get(key)))
    # The model paces every byte: no size may beat the cable (5 % for timer noise).
    if r["busbw_GBps"] > rate_GBps * 1.05:
        print(f"FAIL: {r['op']} {r['size']} B at {r['busbw_GBps']:.2f} GB/s beats the modelled link")
        bad += 1
if sim["failures"] or lo["failures"] or (sock and sock["failures"]):
    print(f"FAIL: wrong results: sim {sim['failures']}, loopback {lo['failures']}"
          + (f", Socket {sock['failures']}" if sock else ""))
    bad += 1
sys.exit(1 if bad else 0)
PY
# Beside the link model alone, the host-bound prediction: the slower of the
# link model and the loopback run above (docs/benchmarks.md, "At 1 MiB and
# below").
if [[ -z $model_note && -f $out/model.json ]]; then
    "$here/host_bound.py" "$out" | tee -a "$out/table.md" || status=1
fi
exit $status

#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# Side-by-side model_bench: a reference commit against the current tree, in
# one run, alternating the two binaries so machine load hits both alike.
#
#   tests/bench/model_bench_compare.sh [REF] [ROUNDS] [BUILD]
#
# REF (default 2ed4e3d, the model before the second speed pass) is exported with
# git archive to /tmp/odl-bench-ref and built there (model_bench only);
# BUILD (default build) is this tree's Release build dir. Each round runs
# each binary with --benchmark_repetitions=3; the medians over all
# repetitions are printed (frames and events per wall second, real-time
# factor, wall and CPU time per 100 000 frames).
set -euo pipefail

root=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
ref=${1:-2ed4e3d}
rounds=${2:-5}
build=${3:-$root/build}
refdir=/tmp/odl-bench-ref-$ref
out=$(mktemp -d)

if [ ! -x "$refdir/build/tests/bench/model_bench" ]; then
  mkdir -p "$refdir"
  git -C "$root" archive "$ref" | tar -x -C "$refdir"
  cmake -S "$refdir" -B "$refdir/build" -G Ninja -DCMAKE_BUILD_TYPE=Release >/dev/null
  cmake --build "$refdir/build" -j2 --target model_bench >/dev/null
fi
cmake --build "$build" -j2 --target model_bench >/dev/null

for r in $(seq "$rounds"); do
  "$refdir/build/tests/bench/model_bench" --benchmark_repetitions=3 \
    --benchmark_format=json >"$out/before.$r.json" 2>/dev/null
  "$build/tests/bench/model_bench" --benchmark_repetitions=3 \
    --benchmark_format=json >"$out/after.$r.json" 2>/dev/null
done

python3 - "$out" <<'EOF'
import glob, json, statistics as st, sys
rows = {}
for side in ("before", "after"):
    for f in sorted(glob.glob(f"{sys.argv[1]}/{side}.*.json")):
        for b in json.load(open(f))["benchmarks"]:
            # The stream benchmarks (the paced one reports other counters).
            if b.get("run_type") != "iteration" or "events_per_wall_s" not in b:
                continue
            name = b["run_name"].removesuffix("/real_time").replace("/100000", "")
            r = rows.setdefault((name, side), {})
            for k, v in (("fps", b["frames_per_wall_s"]), ("eps", b["events_per_wall_s"]),
                         ("rt", b["realtime_factor"]), ("wall", b["real_time"]),
                         ("cpu", b["cpu_time"]), ("gbps", b["sim_gbps"])):
                r.setdefault(k, []).append(v)
print(f"{'benchmark':28} {'side':6} {'n':>3} {'sim Gb/s':>8} {'frames/s':>9} {'events/s':>9} "
      f"{'RT factor':>9} {'wall ms':>8} {'cpu ms':>7}")
for (name, side), r in sorted(rows.items(), key=lambda x: (x[0][0], x[0][1] != "before")):
    m = {k: st.median(v) for k, v in r.items()}
    print(f"{name:28} {side:6} {len(r['fps']):3} {m['gbps']:8.1f} {m['fps']/1e6:8.3f}M "
          f"{m['eps']/1e6:8.2f}M {m['rt']:9.3f} {m['wall']:8.1f} {m['cpu']:7.1f}")
EOF
rm -rf "$out"

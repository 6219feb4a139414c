#!/usr/bin/env bash
# make bench-fleet: throughput of 3 `halcyon serve` nodes (sharing a redis-server) behind the recipe's
# nginx against 1 node behind the same nginx, on this machine, with wrk through nginx. Two workloads:
# "cold" (every URL distinct: no cache can help) and "mixed" (70% of requests for 300 popular URLs,
# Zipf-distributed, 30% distinct), so the nginx hit ratio that makes a fleet worth it shows next to the
# req/s. Release binary; BENCH_SECONDS per cell (default 30), ROUNDS rounds (default 2), sides alternating.
# Appends a markdown table to BENCH_RESULTS when set. Loopback only.
set -euo pipefail
cd "$(dirname "$0")/.."
ROOT=$PWD
. scripts/fleet-lib.sh
fleet_begin release halcyon-fleet-bench curl wrk
SECONDS_PER_CELL=${BENCH_SECONDS:-30}; ROUNDS=${ROUNDS:-2}

# Signed request paths for both workloads, fixed seed.
PYTHONPATH="$ROOT/scripts" python3 - "$WORK" <<PY
import random, sys
from halcyon_sign import image_path
work = sys.argv[1]
key, salt = bytes.fromhex("$KEY"), bytes.fromhex("$SALT")
samples = ["landscape.jpg", "pattern.webp", "badge.png"]
def path(kind, i):
    return image_path("rs:fit:256:256", f"http://127.0.0.1:$ORIGIN_PORT/src/{kind}{i}/{samples[i % 3]}", "jpg", key, salt)
rng = random.Random(16)
weights = [1 / (rank + 1) for rank in range(300)]
for name, popular_share in (("cold", 0.0), ("mixed", 0.7)):
    with open(f"{work}/{name}.paths", "w") as out:
        for n in range(60000):
            if rng.random() < popular_share:
                out.write(path("p", rng.choices(range(300), weights)[0]) + "\n")
            else:
                out.write(path(f"u{name}", n) + "\n")
PY

start_redis
# Both fleets run side by side; each cell gets a fresh nginx cache and fresh node caches.
cell() { # nodes, workload, round → prints "req/s p50 p99 hit%"
    local nodes=$1 workload=$2 round=$3 dir="n$1-$2-$3"
    start_nodes "$nodes" --redis-url "redis://127.0.0.1:$REDIS_PORT/$(( nodes == 1 ? 1 : 2 ))"
    start_fleet_nginx "$dir"
    redis-cli -p "$REDIS_PORT" -n $(( nodes == 1 ? 1 : 2 )) flushdb >/dev/null
    local out; out=$(wrk -t1 -c8 -d"${SECONDS_PER_CELL}s" --latency -s "$ROOT/scripts/wrk-paths.lua" \
        "http://127.0.0.1:$FLEET_PORT" -- "$WORK/$workload.paths" 2>&1)
    local rps p50 p99 hits total
    rps=$(echo "$out" | awk '/Requests\/sec/ {print $2}')
    p50=$(echo "$out" | awk '$1 == "50%" {print $2}')
    p99=$(echo "$out" | awk '$1 == "99%" {print $2}')
    total=$(wc -l < "$WORK/$dir/access.log"); hits=$(grep -c ' HIT ' "$WORK/$dir/access.log" || true)
    for pid in "${NODE_PIDS[@]}"; do kill -9 "$pid" 2>/dev/null || true; done
    kill_nginx "$WORK/$dir/nginx.pid"
    rm -rf "$WORK"/node* "$WORK/$dir/cache"
    echo "$rps $p50 $p99 $(python3 -c "print(round(100 * $hits / max(1, $total), 1))")"
}

declare -A RESULTS
for round in $(seq 1 "$ROUNDS"); do
    for workload in cold mixed; do
        order="1 3"; [ $(( round % 2 )) = 0 ] && order="3 1"
        for nodes in $order; do
            result=$(cell "$nodes" "$workload" "$round")
            echo "round $round, $workload, $nodes node(s): $result"
            RESULTS[$workload-$nodes]+="$result;"
        done
    done
done

table="### Fleet: 3 nodes vs 1 node behind nginx on $(nproc) cores (${SECONDS_PER_CELL} s cells, $ROUNDS rounds, wrk -c8)

| workload | nodes | req/s (median, min–max) | p50 | p99 | nginx hit % | req/s ratio 3/1 |
|---|---:|---:|---:|---:|---:|---:|
"
for workload in cold mixed; do
    table+=$(python3 - "${RESULTS[$workload-1]}" "${RESULTS[$workload-3]}" "$workload" <<'PY'
import sys, statistics
one, three, workload = sys.argv[1:]
def rows(text):
    return [r.split() for r in text.strip(";").split(";")]
def summary(cells):
    rps = [float(c[0]) for c in cells]
    return statistics.median(rps), min(rps), max(rps), cells[len(cells) // 2][1], cells[len(cells) // 2][2], statistics.median(float(c[3]) for c in cells)
a, b = summary(rows(one)), summary(rows(three))
for nodes, s in ((1, a), (3, b)):
    ratio = f"{b[0] / a[0]:.2f}" if nodes == 3 else "1.00"
    print(f"| {workload} | {nodes} | {s[0]:.1f} ({s[1]:.1f}–{s[2]:.1f}) | {s[3]} | {s[4]} | {s[5]:.1f} | {ratio} |")
PY
)$'\n'
done
echo "$table"
[ -n "${BENCH_RESULTS:-}" ] && printf '%s\n' "$table" >> "$BENCH_RESULTS"
exit 0

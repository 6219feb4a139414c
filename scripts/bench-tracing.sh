#!/usr/bin/env bash
# make bench-tracing: what tracing costs `halcyon serve` (release). One node with tracing off and one
# with --trace-endpoint (OTLP/HTTP to an nginx that answers 200, so export runs for real), every
# request traced and 10% sampled, side by side, on two paths: a response-cache hit (one URL repeated) and a full request (distinct URLs:
# fetch, decode, resize, encode). wrk -c4, BENCH_SECONDS per cell (default 20), ROUNDS (default 3),
# sides alternating. Prints req/s medians and the on/off ratio. Loopback only.
set -euo pipefail
cd "$(dirname "$0")/.."
ROOT=$PWD
. scripts/fleet-lib.sh
fleet_begin release halcyon-trace-bench curl wrk
SECONDS_PER_CELL=${BENCH_SECONDS:-20}; ROUNDS=${ROUNDS:-3}
SINK_PORT=$(free_port)
mkdir -p "$WORK/sink"
cat > "$WORK/sink/site.conf" <<CONF
server {
    listen 127.0.0.1:$SINK_PORT;
    location / { default_type application/json; return 200 '{}'; }
}
CONF
run_nginx "$WORK/sink" "$WORK/sink/site.conf"

PYTHONPATH="$ROOT/scripts" python3 - "$WORK" <<PY
import sys
from halcyon_sign import image_path
key, salt = bytes.fromhex("$KEY"), bytes.fromhex("$SALT")
def path(i):
    return image_path("rs:fit:256:256", f"http://127.0.0.1:$ORIGIN_PORT/src/t{i}/landscape.jpg", "jpg", key, salt)
for side in ("off", "on", "sampled"):
    with open(f"{sys.argv[1]}/{side}.paths", "w") as out:
        for n in range(40000):
            out.write(path(f"{side}{n}") + "\n")
    with open(f"{sys.argv[1]}/{side}.hit", "w") as out:
        out.write(path(f"{side}-hot") + "\n")
PY

start_nodes 1
OFF_PORT=${NODE_PORTS[0]}
mv "$WORK/node0" "$WORK/node-off" 2>/dev/null || true
HALCYON_TRACE_ENDPOINT="http://127.0.0.1:$SINK_PORT" start_nodes 1
ON_PORT=${NODE_PORTS[0]}
mv "$WORK/node0" "$WORK/node-on" 2>/dev/null || true
HALCYON_TRACE_ENDPOINT="http://127.0.0.1:$SINK_PORT" OTEL_TRACES_SAMPLER=parentbased_traceidratio \
    OTEL_TRACES_SAMPLER_ARG=0.1 start_nodes 1
SAMPLED_PORT=${NODE_PORTS[0]}

cell() { # port, paths file → req/s
    wrk -t1 -c4 -d"${SECONDS_PER_CELL}s" -s "$ROOT/scripts/wrk-paths.lua" "http://127.0.0.1:$1" -- "$2" 2>&1 |
        awk '/Requests\/sec/ {print $2}'
}
declare -A RESULTS
for round in $(seq 1 "$ROUNDS"); do
    for kind in hit paths; do
        order="off on sampled"; [ $(( round % 2 )) = 0 ] && order="sampled on off"
        for side in $order; do
            port=$OFF_PORT; [ "$side" = on ] && port=$ON_PORT; [ "$side" = sampled ] && port=$SAMPLED_PORT
            file="$WORK/$side.$kind"
            [ "$kind" = paths ] && python3 -c "import random,sys; l=open('$file').read().split(); random.Random($round).shuffle(l); open('$file','w').write('\n'.join(l)+'\n')"
            rps=$(cell "$port" "$file")
            echo "round $round, $kind, tracing $side: $rps req/s"
            RESULTS[$kind-$side]+="$rps "
        done
    done
done
exported=$(grep -c 'POST /v1/traces' "$WORK/sink/access.log" || true)
python3 - "${RESULTS[hit-off]}" "${RESULTS[hit-on]}" "${RESULTS[hit-sampled]}" "${RESULTS[paths-off]}" \
    "${RESULTS[paths-on]}" "${RESULTS[paths-sampled]}" "$exported" <<'PY'
import statistics, sys
hit_off, hit_on, hit_sampled, full_off, full_on, full_sampled, exported = sys.argv[1:]
def m(text):
    values = [float(v) for v in text.split()]
    return statistics.median(values), min(values), max(values)
print("| path | tracing off req/s | every request traced | on/off | 10% sampled | sampled/off |")
print("|---|---:|---:|---:|---:|---:|")
for name, off, on, sampled in (("response-cache hit", hit_off, hit_on, hit_sampled),
                               ("full request (fetch, resize, encode)", full_off, full_on, full_sampled)):
    a, b, c = m(off), m(on), m(sampled)
    print(f"| {name} | {a[0]:.0f} ({a[1]:.0f}–{a[2]:.0f}) | {b[0]:.0f} ({b[1]:.0f}–{b[2]:.0f}) | {b[0] / a[0]:.3f} "
          f"| {c[0]:.0f} ({c[1]:.0f}–{c[2]:.0f}) | {c[0] / a[0]:.3f} |")
print(f"OTLP export requests received by the sink: {exported}")
PY

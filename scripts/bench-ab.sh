#!/usr/bin/env bash
# make bench-ab: two or more `halcyon serve` binaries side by side on uncached resizes of real
# photographs, to tell whether a change made the service slower. Each binary runs as a child process
# with its defaults (plus --insecure --allow-loopback --local-root PHOTOS: the sources are local files,
# so no origin's noise is in the figures). Every request is a distinct URL and the two wrk threads never
# ask for the same photograph at once (scripts/bench-ab.lua). Per cell: req/s, server CPU ms a request
# (/proc/PID/stat), cores busy, peak RSS (VmHWM). The binaries' order rotates each round; the summary
# gives each binary's median and range against the first binary's median.
#   BINS="before=/path/halcyon after=/path/halcyon"  (required)   PHOTOS (scripts/bench-photos.sh FOLDER)
#   BENCH_SECONDS (20) ROUNDS (3) CLIENTS (2) FORMATS ("jpg:jpg png:png webp:webp jpg:avif", source:output)
#   SOURCE_BASE (say http://127.0.0.1:8081, an origin serving PHOTOS' files): fetch the photographs from it instead
set -euo pipefail
cd "$(dirname "$0")/.."
BINS=${BINS:?BINS=\"label=binary label=binary\"}
PHOTOS=${PHOTOS:?PHOTOS must name the photographs\' folder (scripts/bench-photos.sh FOLDER)}
SECS=${BENCH_SECONDS:-20}; ROUNDS=${ROUNDS:-3}; CLIENTS=${CLIENTS:-2}
FORMATS=${FORMATS:-"jpg:jpg png:png webp:webp jpg:avif"}
THREADS=$(( CLIENTS < 2 ? 1 : 2 )); HZ=$(getconf CLK_TCK)
WORK=$(mktemp -d); trap 'rm -rf "$WORK"' EXIT
PORT=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
read -ra bins <<< "$BINS"

load() { # seconds src out
  SRC_EXT=$2 OUT_EXT=$3 WRK_THREADS=$THREADS wrk -t"$THREADS" -c"$CLIENTS" -d"$1"s -s scripts/bench-ab.lua \
    "http://127.0.0.1:$PORT"
}

cell() { # label binary src out
  local home; home=$(mktemp -d "$WORK/home.XXXX")
  HOME=$home "$2" serve --insecure --allow-loopback --local-root "$PHOTOS" --host 127.0.0.1 --port "$PORT" \
    >"$home/log" 2>&1 &
  local pid=$!
  for _ in $(seq 100); do curl -sf -o /dev/null "http://127.0.0.1:$PORT/health" && break; sleep 0.1; done
  load 2 "$3" "$4" >/dev/null
  local t0 w0 t1 w1 out
  t0=$(awk '{print $14+$15}' "/proc/$pid/stat"); w0=$(date +%s.%N)
  out=$(load "$SECS" "$3" "$4")
  w1=$(date +%s.%N); t1=$(awk '{print $14+$15}' "/proc/$pid/stat")
  local rss; rss=$(awk '/VmHWM/{print $2}' "/proc/$pid/status")
  kill "$pid"; wait "$pid" 2>/dev/null || true
  local requests errors
  requests=$(echo "$out" | awk '/requests in/{print $1}')
  errors=$(echo "$out" | awk '/Non-2xx/{print $4}')
  python3 - "$1" "$3>$4" "$requests" "$t0" "$t1" "$HZ" "$w0" "$w1" "${errors:-0}" "$rss" <<'PY' | tee -a "$WORK/cells"
import sys
label, fmt, n, t0, t1, hz, w0, w1, bad, rss = sys.argv[1:]
n = int(n); cpu = (float(t1) - float(t0)) / float(hz); wall = float(w1) - float(w0)
print(f"{label}\t{fmt}\t{n / wall:.1f}\t{1000 * cpu / max(n, 1):.2f}\t{cpu / wall:.2f}\t{int(rss) // 1024}\t{bad}")
PY
}

command -v wrk >/dev/null && command -v curl >/dev/null || { echo "bench-ab needs wrk and curl"; exit 1; }
echo "label	cell	req/s	cpu-ms/req	cores	peak-MiB	non-2xx"
for round in $(seq "$ROUNDS"); do
  for f in $FORMATS; do
    for k in $(seq 0 $(( ${#bins[@]} - 1 ))); do
      b=${bins[$(( (k + round) % ${#bins[@]} ))]}
      cell "${b%%=*}" "${b#*=}" "${f%%:*}" "${f##*:}"
    done
  done
done
python3 - "$WORK/cells" "$CLIENTS" "${bins[@]%%=*}" <<'PY'
import sys, statistics
from collections import defaultdict
rows = [line.rstrip("\n").split("\t") for line in open(sys.argv[1])]
clients, labels = sys.argv[2], sys.argv[3:]
first = labels[0]
cells = defaultdict(lambda: defaultdict(list))
for label, fmt, rps, cpu, cores, rss, bad in rows:
    cells[fmt][label].append((float(rps), float(cpu), float(cores), int(rss), int(bad)))
print(f"\n| cell (c{clients}) | binary | req/s median (range) | ÷ {first} | CPU ms/req median | cores busy | peak MiB | non-2xx |")
print("|---|---|---|---:|---:|---|---:|---:|")
for fmt, sides in cells.items():
    base = statistics.median(r[0] for r in sides[first])
    for label in labels:
        runs = sides[label]
        rps = [r[0] for r in runs]
        print(f"| {fmt} | {label} | {statistics.median(rps):.1f} ({min(rps):.1f}–{max(rps):.1f}) | "
              f"{statistics.median(rps) / base:.2f} | {statistics.median(r[1] for r in runs):.2f} | "
              f"{min(r[2] for r in runs):.2f}–{max(r[2] for r in runs):.2f} | {max(r[3] for r in runs)} | "
              f"{sum(r[4] for r in runs)} |")
PY

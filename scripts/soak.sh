#!/usr/bin/env bash
# `make soak`: a release `halcyon serve` under hostile load on loopback for SOAK_SECONDS (default 600):
#   - an unsigned /health flood (wrk, 64 connections);
#   - signed, uncached resize traffic (wrk, 8 connections): distinct URLs over generated 3–12 MP sources
#     (JPEG, PNG, WebP), mixed with worst-case requests (4096² force + blur, animation blow-ups) and
#     bad signatures;
#   - RSS sampled every second.
# Fails when the server dies (any signal), when a request got no answer at all, or when RSS exceeds the
# configured budgets (memory cache + response cache + image memory) + 64 MB during the worst-case
# requests (caches empty), or the budgets + the idle process + 64 MB over the whole run.
set -euo pipefail
cd "$(dirname "$0")/.."

SECONDS_TOTAL="${SOAK_SECONDS:-600}"
BIN="${HALCYON_BIN:?set HALCYON_BIN to a release halcyon executable}"
WORK="${SOAK_WORK:-.build/soak}"
MEMORY_CACHE_MB="${SOAK_MEMORY_CACHE_MB:-256}"
RESPONSE_CACHE_MB="${SOAK_RESPONSE_CACHE_MB:-64}"
BUDGET_MB="${SOAK_MEMORY_BUDGET_MB:-512}"
KEY=$(head -c 32 /dev/urandom | od -An -tx1 | tr -d ' \n')
SALT=$(head -c 16 /dev/urandom | od -An -tx1 | tr -d ' \n')

for tool in wrk python3 curl; do
    command -v "$tool" >/dev/null || { echo "soak needs $tool (apt-get install wrk python3)" >&2; exit 1; }
done
rm -rf "$WORK" && mkdir -p "$WORK/root"

echo "==> sources: generating 3–12 MP images from Samples/ with the halcyon CLI"
"$BIN" process Samples/landscape.jpg "$WORK/root/a.jpg" -p 'resize(4000x3000,force)|>blur(1)' >/dev/null
"$BIN" process Samples/pattern.webp "$WORK/root/b.webp" -p 'resize(2000x3000,force)' >/dev/null
"$BIN" process Samples/badge.png "$WORK/root/c.png" -p 'resize(2048x2048,force)|>round(100)' >/dev/null
"$BIN" process Samples/landscape.jpg "$WORK/root/d.jpg" -p 'resize(2400x1600,force)|>bw' >/dev/null
cp Samples/spinner.gif "$WORK/root/e.gif"

LOG="$WORK/serve.log"
HALCYON_KEY="$KEY" HALCYON_SALT="$SALT" "$BIN" serve --host 127.0.0.1 --port 0 --local-root "$WORK/root" \
    --cache-dir "$WORK/cache" --memory-budget "$BUDGET_MB" --request-timeout 20 >"$LOG" 2>&1 &
SERVER=$!
cleanup() { kill -TERM "$SERVER" 2>/dev/null || true; wait "$SERVER" 2>/dev/null || true; }
trap cleanup EXIT
PORT=""
for _ in $(seq 1 150); do
    PORT=$(sed -n 's/.*\[HalcyonServer\] listening on [0-9.]*:\([0-9]*\)$/\1/p' "$LOG" | head -1)
    [ -n "$PORT" ] && break
    kill -0 "$SERVER" 2>/dev/null || { cat "$LOG"; echo "halcyon serve exited early" >&2; exit 1; }
    sleep 0.2
done
[ -n "$PORT" ] || { echo "halcyon serve did not start" >&2; exit 1; }
echo "==> halcyon serve (pid $SERVER) on 127.0.0.1:$PORT; budgets: memory cache $MEMORY_CACHE_MB MB, responses $RESPONSE_CACHE_MB MB, image memory $BUDGET_MB MB"

python3 - "$KEY" "$SALT" "$WORK/worst.txt" > "$WORK/paths.txt" <<'PY'
import base64, hashlib, hmac, random, sys
key, salt = bytes.fromhex(sys.argv[1]), bytes.fromhex(sys.argv[2])
def sign(tail):
    mac = hmac.new(key, salt + tail.encode(), hashlib.sha256).digest()
    return "/" + base64.urlsafe_b64encode(mac).decode().rstrip("=") + tail
random.seed(7)
sources = ["a.jpg", "b.webp", "c.png", "d.jpg", "e.gif"]
lines = []
for i in range(60000):
    src = "local:///" + random.choice(sources)
    if i % 50 == 0:
        options = random.choice(["rs:force:4096:4096/bl:30", "rs:force:8192:8192", "rs:force:2000:2000/bl:20"])
    else:
        options = "rs:%s:%d:%d/q:%d" % (random.choice(["fit", "fill"]), random.randint(64, 1600), random.randint(64, 1600), random.randint(50, 95))
    ext = random.choice(["", "@webp", "@png", "@jpg"])
    tail = "/" + options + "/plain/" + src + ext
    lines.append("/AAAA" + tail if i % 97 == 0 else sign(tail))
print("\n".join(lines))
worst = ["/rs:force:4096:4096/bl:40/plain/local:///a.jpg", "/rs:force:4096:4096/bl:40/plain/local:///c.png@png",
         "/rs:force:8000:7500/plain/local:///b.webp", "/rs:force:2000:2000/plain/local:///e.gif"]
with open(sys.argv[3], "w") as out:
    out.write("\n".join(sign(tail) for tail in worst) + "\n")
PY
cat > "$WORK/paths.lua" <<'LUA'
local paths = {}
local index = 0
init = function(args)
    for line in io.lines(args[1]) do paths[#paths + 1] = line end
    index = math.random(#paths)
end
request = function()
    index = index % #paths + 1
    return wrk.format("GET", paths[index])
end
LUA

rss_kb() { awk '/VmRSS/ {print $2}' "/proc/$SERVER/status" 2>/dev/null || echo 0; }
BASE_RSS=$(rss_kb)
echo "==> idle RSS after start-up: $((BASE_RSS / 1024)) MB"
echo "==> 4 concurrent worst-case requests (16.7 MP results with a wide blur, 60 MP refused, an animation blown up)"
WORST=(
    "$(sed -n 1p "$WORK/worst.txt")" "$(sed -n 2p "$WORK/worst.txt")" "$(sed -n 3p "$WORK/worst.txt")" "$(sed -n 4p "$WORK/worst.txt")"
)
PIDS=()
for path in "${WORST[@]}"; do
    curl -s -o /dev/null -w '    %{http_code} %{size_download} B %{time_total} s\n' --max-time 60 "http://127.0.0.1:$PORT$path" &
    PIDS+=($!)
done
WORST_PEAK=0
while :; do
    RUNNING=0
    for pid in "${PIDS[@]}"; do kill -0 "$pid" 2>/dev/null && RUNNING=1; done
    RSS=$(rss_kb); [ "${RSS:-0}" -gt "$WORST_PEAK" ] && WORST_PEAK=$RSS
    [ "$RUNNING" = 1 ] || break
    sleep 0.1
done
wait "${PIDS[@]}" 2>/dev/null || true
echo "    peak RSS during them: $((WORST_PEAK / 1024)) MB"

echo "==> $SECONDS_TOTAL s of load: /health flood (64 connections) + signed uncached resizes (8 connections)"
wrk -t1 -c64 -d"${SECONDS_TOTAL}s" --timeout 60s "http://127.0.0.1:$PORT/health" > "$WORK/health.txt" 2>&1 &
HEALTH=$!
wrk -t1 -c8 -d"${SECONDS_TOTAL}s" --timeout 60s -s "$WORK/paths.lua" "http://127.0.0.1:$PORT" -- "$WORK/paths.txt" > "$WORK/images.txt" 2>&1 &
IMAGES=$!
PEAK=0
ALIVE=1
while kill -0 "$HEALTH" 2>/dev/null || kill -0 "$IMAGES" 2>/dev/null; do
    if ! kill -0 "$SERVER" 2>/dev/null; then ALIVE=0; break; fi
    RSS=$(rss_kb)
    [ "${RSS:-0}" -gt "$PEAK" ] && PEAK=$RSS
    sleep 1
done
wait "$HEALTH" 2>/dev/null || true
wait "$IMAGES" 2>/dev/null || true
kill -0 "$SERVER" 2>/dev/null || ALIVE=0

summary() { grep -E "requests in|Non-2xx|Socket errors|Requests/sec" "$1" | tr -s ' ' | sed 's/^/    /'; }
echo "==> /health flood"; summary "$WORK/health.txt"
echo "==> signed resizes"; summary "$WORK/images.txt"
echo "==> statuses of image requests (server log):"
grep -o 'GET /-[^ ]* [0-9][0-9][0-9] ' "$LOG" | awk '{print $3}' | sort | uniq -c | sed 's/^/    /' || true
# While the caches are still empty (the worst-case phase) RSS must stay under the budgets + 64 MB;
# over the whole run, with both caches full, under the budgets + the idle process + 64 MB.
LIMIT_KB=$(( (MEMORY_CACHE_MB + RESPONSE_CACHE_MB + BUDGET_MB + 64) * 1024 ))
RUN_LIMIT_KB=$(( LIMIT_KB + BASE_RSS ))
echo "==> peak RSS during the worst-case requests $((WORST_PEAK / 1024)) MB; budgets + 64 MB = $((LIMIT_KB / 1024)) MB"
echo "==> peak RSS over the run $((PEAK / 1024)) MB; budgets + idle $((BASE_RSS / 1024)) MB + 64 MB = $((RUN_LIMIT_KB / 1024)) MB"

FAILED=0
if [ "$ALIVE" = 0 ]; then
    wait "$SERVER" 2>/dev/null; STATUS=$?
    echo "FAIL: halcyon serve died (exit status $STATUS)"; tail -20 "$LOG"; FAILED=1
fi
if grep -q "Socket errors:.*timeout [1-9]" "$WORK/health.txt" "$WORK/images.txt"; then
    echo "FAIL: requests timed out without an answer"; FAILED=1
fi
[ "$PEAK" -le "$RUN_LIMIT_KB" ] || { echo "FAIL: peak RSS over the budgets"; FAILED=1; }
[ "$WORST_PEAK" -le "$LIMIT_KB" ] || { echo "FAIL: peak RSS over the budgets during the worst-case requests"; FAILED=1; }
if [ "$FAILED" = 0 ]; then
    kill -TERM "$SERVER"; wait "$SERVER"; STATUS=$?
    echo "==> SIGTERM: exit status $STATUS"
    [ "$STATUS" = 0 ] || FAILED=1
fi
trap - EXIT
[ "$FAILED" = 0 ] && echo "soak passed: $SECONDS_TOTAL s, 0 crashes" || exit 1

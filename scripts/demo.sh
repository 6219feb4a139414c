#!/usr/bin/env bash
# The README's main job (`make run`): the whole Halcyon path on this machine, no outside network.
#   1. process the bundled samples locally through a processor chain;
#   2. start `halcyon serve` on a free loopback port over Samples/;
#   3. prefetch every sample through HTTP (live progress bar on a terminal);
#   4. fetch one through a processor chain into ./halcyon-out/, twice (network, then memory);
#   5. fetch it again in a new process (disk cache hit);
#   6. print `halcyon cache info`; 7. stop the server gracefully.
set -euo pipefail
cd "$(dirname "$0")/.."

BIN="${HALCYON_BIN:?set HALCYON_BIN to the built halcyon executable}"
OUT="${OUT:-halcyon-out}"
CHAIN="${CHAIN:-downsample(640)|>round(24)|>border(4,#1d3557)}"
CACHE_DIR="$OUT/cache"
mkdir -p "$OUT"

step() { printf '\n==> %s\n' "$*"; }

step "halcyon $("$BIN" version | sed 's/^halcyon //')"

step "processing Samples/ locally with '$CHAIN' into ./$OUT/processed/"
"$BIN" process Samples "$OUT/processed" -p "$CHAIN"

step "emptying the demo cache ($CACHE_DIR) so every step shows its own work"
"$BIN" cache clear --cache-dir "$CACHE_DIR" --name demo

LOG="$OUT/serve.log"
step "starting halcyon serve on a free loopback port over Samples/ (log: $LOG)"
"$BIN" serve --insecure --host 127.0.0.1 --port 0 --local-root Samples --cache-dir "$OUT/server-cache" >"$LOG" 2>&1 &
SERVER=$!
stop_server() {
    if kill -0 "$SERVER" 2>/dev/null; then
        kill -TERM "$SERVER" 2>/dev/null || true
        wait "$SERVER" 2>/dev/null || true
    fi
}
trap stop_server EXIT

PORT=""
for _ in $(seq 1 150); do
    # `read` skips a last line still being written, so a half-written port is never taken.
    while IFS= read -r line; do
        case "$line" in *"[HalcyonServer] listening on "*) PORT="${line##*:}" ;; esac
    done < "$LOG"
    case "$PORT" in ''|*[!0-9]*) PORT="" ;; *) break ;; esac
    kill -0 "$SERVER" 2>/dev/null || { cat "$LOG"; echo "halcyon serve exited early" >&2; exit 1; }
    sleep 0.2
done
[ -n "$PORT" ] || { cat "$LOG"; echo "halcyon serve did not start listening" >&2; exit 1; }
BASE="http://127.0.0.1:$PORT"
echo "listening on $BASE; health: $(curl -fsS "$BASE/health" 2>/dev/null || echo 'curl not installed')"

URLS=()
for sample in Samples/*; do
    URLS+=("$BASE/insecure/rs:fit:1200:1200/plain/local:///$(basename "$sample")")
done

step "prefetching ${#URLS[@]} samples through HTTP, 2 at a time"
"$BIN" prefetch --cache-dir "$CACHE_DIR" --name demo --concurrency 2 "${URLS[@]}"

ONE="$BASE/insecure/rs:fill:800:600/g:ce/plain/local:///landscape.jpg"
step "fetching a server crop of one sample with '$CHAIN' twice in one run: network, then memory"
"$BIN" fetch --cache-dir "$CACHE_DIR" --name demo "$ONE" "$ONE" -p "$CHAIN" -o "$OUT"

step "fetching it again in a new process: the disk cache answers"
"$BIN" fetch --cache-dir "$CACHE_DIR" --name demo "$ONE" -p "$CHAIN" -o "$OUT"

step "halcyon cache info"
"$BIN" cache info --cache-dir "$CACHE_DIR" --name demo

step "stopping the server (SIGTERM, graceful)"
stop_server
trap - EXIT
echo "done: results in ./$OUT/"

#!/usr/bin/env bash
# make test-fleet: 3 `halcyon serve` nodes sharing a redis-server, behind nginx configured by
# deploy/nginx/halcyon.conf, with a second nginx as the origin. Phase 1 (scripts/fleet_load.py): a
# bounded load with one node SIGKILLed mid-run; zero failed requests, each repeated URL computed once,
# nginx cache hits, results shared through Redis. Phase 2 (scripts/fleet_poison.py, last: it leaves
# nodes dead): the killed node restarted as a supervisor would, a fresh nginx with the same recipe,
# and one request whose node dies under it (a trap origin SIGKILLs every node that asks it for the
# source): how many nodes it reaches, bounded by the recipe's proxy_next_upstream_tries.
# Loopback only, < 3 minutes. HALCYON_BIN overrides the binary; FLEET_REDIS=0 runs without Redis (its
# checks are skipped); FLEET_RECIPE runs another nginx recipe (to see the checks fail on a broken one).
set -euo pipefail
cd "$(dirname "$0")/.."
ROOT=$PWD
. scripts/fleet-lib.sh
fleet_begin debug halcyon-fleet curl
REDIS_ARGS=()
if [ "${FLEET_REDIS:-1}" != 0 ]; then
    start_redis
    REDIS_ARGS=(--redis-url "redis://127.0.0.1:$REDIS_PORT/0")
fi
start_nodes 3 "${REDIS_ARGS[@]}"
start_fleet_nginx fleet

fleet_run() { # runs a Python phase with the fleet's ports, pids and secrets in its environment
    env HALCYON_KEY="$KEY" HALCYON_SALT="$SALT" FLEET_PORT="$FLEET_PORT" ORIGIN_PORT="$ORIGIN_PORT" \
        FLEET_REDIS="${FLEET_REDIS:-1}" NODE_PORTS="$(IFS=,; echo "${NODE_PORTS[*]}")" \
        NODE_PIDS="$(IFS=,; echo "${NODE_PIDS[*]}")" "$@"
}
show_logs() { echo "==> fleet test failed ($1); logs:"; tail -n 20 "$WORK"/node*.log "$WORK"/*/error.log || true; }

SAMPLES=$(cd Samples && ls | grep -E '\.(jpg|png|webp|gif)$' | paste -sd, -)
echo "==> fleet: nginx :$FLEET_PORT → nodes ${NODE_PORTS[*]}, origin :$ORIGIN_PORT, redis ${REDIS_ARGS[*]:-off}"
status=0
ORIGIN_LOG="$WORK/origin/access.log" FLEET_LOG="$WORK/fleet/access.log" SAMPLES="$SAMPLES" \
    fleet_run timeout 150 python3 scripts/fleet_load.py || status=$?
[ $status = 0 ] || show_logs $status

echo "==> a request whose node dies under it"
phase_start=$(date +%s.%N)
restart_dead_nodes
start_fleet_nginx poison
TRIES=$(sed -n 's/^[[:space:]]*proxy_next_upstream_tries[[:space:]]*\([0-9]*\);.*/\1/p' "$WORK/poison/halcyon.conf")
poison_status=0
TRIES=${TRIES:-0} POISON_LOG="$WORK/poison/access.log" fleet_run timeout 120 python3 scripts/fleet_poison.py \
    || poison_status=$?
echo "==> poison phase took $(python3 -c "import time; print(round(time.time() - $phase_start, 1))") s"
[ $poison_status = 0 ] || { show_logs $poison_status; status=$poison_status; }
exit $status

#!/usr/bin/env bash
# make test-fleet: 3 `halcyon serve` nodes sharing a redis-server, behind nginx configured by
# deploy/nginx/halcyon.conf, with a second nginx as the origin; a bounded load with one node
# SIGKILLed mid-run; the checks of issue #17 (scripts/fleet_load.py). Loopback only, < 3 minutes.
# HALCYON_BIN overrides the binary; FLEET_REDIS=0 runs without Redis (its checks are skipped);
# FLEET_RECIPE runs another nginx recipe (to see the checks fail on a broken one).
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

SAMPLES=$(cd Samples && ls | grep -E '\.(jpg|png|webp|gif)$' | paste -sd, -)
echo "==> fleet: nginx :$FLEET_PORT → nodes ${NODE_PORTS[*]}, origin :$ORIGIN_PORT, redis ${REDIS_ARGS[*]:-off}"
status=0
HALCYON_KEY=$KEY HALCYON_SALT=$SALT FLEET_PORT=$FLEET_PORT ORIGIN_PORT=$ORIGIN_PORT \
    NODE_PORTS=$(IFS=,; echo "${NODE_PORTS[*]}") NODE_PIDS=$(IFS=,; echo "${NODE_PIDS[*]}") \
    ORIGIN_LOG="$WORK/origin/access.log" FLEET_LOG="$WORK/fleet/access.log" SAMPLES="$SAMPLES" \
    FLEET_REDIS=${FLEET_REDIS:-1} timeout 150 python3 scripts/fleet_load.py || status=$?
if [ $status != 0 ]; then
    echo "==> fleet test failed ($status); logs:"; tail -n 20 "$WORK"/node*.log "$WORK/fleet/error.log" || true
fi
exit $status

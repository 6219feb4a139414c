#!/usr/bin/env bash
# make test-fleet: 3 `halcyon serve` nodes sharing a redis-server, behind nginx configured by
# deploy/nginx/halcyon.conf, with a second nginx as the origin; a bounded load with one node
# SIGKILLed mid-run; the checks of issue #17 (scripts/fleet_load.py). Loopback only, < 3 minutes.
# HALCYON_BIN overrides the binary; FLEET_REDIS=0 runs without Redis (its checks are skipped);
# FLEET_RECIPE runs another nginx recipe (to see the checks fail on a broken one).
set -euo pipefail
cd "$(dirname "$0")/.."
ROOT=$PWD
SUDO=""; [ "$(id -u)" = 0 ] || SUDO=sudo
need=()
command -v nginx >/dev/null 2>&1 || [ -x /usr/sbin/nginx ] || need+=(nginx)
command -v redis-server >/dev/null 2>&1 || need+=(redis-server)
command -v python3 >/dev/null 2>&1 || need+=(python3)
if [ ${#need[@]} -gt 0 ]; then
    echo "==> installing ${need[*]} with apt"
    $SUDO apt-get update -qq && DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq "${need[@]}"
fi
NGINX=$(command -v nginx || echo /usr/sbin/nginx)
BIN=${HALCYON_BIN:-$(swift build --show-bin-path)/halcyon}
[ -x "$BIN" ] || { echo "no halcyon binary at $BIN (run swift build)"; exit 1; }

WORK=$(mktemp -d /tmp/halcyon-fleet.XXXXXX)
PIDS=()
cleanup() {
    for pid in "${PIDS[@]}"; do kill -9 "$pid" 2>/dev/null || true; done
    [ -f "$WORK/fleet/nginx.pid" ] && kill -9 "$(cat "$WORK/fleet/nginx.pid")" 2>/dev/null || true
    [ -f "$WORK/origin/nginx.pid" ] && kill -9 "$(cat "$WORK/origin/nginx.pid")" 2>/dev/null || true
    pkill -9 -f "$WORK" 2>/dev/null || true
    wait 2>/dev/null || true
    if [ "${KEEP_FLEET_WORK:-0}" = 1 ]; then echo "work folder kept: $WORK"; else rm -rf "$WORK"; fi
}
trap cleanup EXIT

free_port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1]); s.close()'; }
wait_http() { # url, seconds
    for _ in $(seq 1 $(( $2 * 10 ))); do
        curl -fsS -o /dev/null --max-time 1 "$1" 2>/dev/null && return 0
        sleep 0.1
    done
    echo "timed out waiting for $1"; return 1
}
# nginx as this user, every path inside one folder.
run_nginx() { # folder, http-block-file, [access log format]
    mkdir -p "$1/tmp"
    # Workers run as this user (nginx started by root would switch them to nobody, who cannot use the folder).
    cat > "$1/nginx.conf" <<CONF
user $(id -un) $(id -gn);
worker_processes 1;
pid $1/nginx.pid;
error_log $1/error.log warn;
events { worker_connections 1024; }
http {
    log_format fleet '\$request_uri \$status \$upstream_cache_status "\$upstream_addr"';
    access_log $1/access.log ${3:-combined};
    client_body_temp_path $1/tmp/body;
    proxy_temp_path $1/tmp/proxy;
    fastcgi_temp_path $1/tmp/fastcgi;
    uwsgi_temp_path $1/tmp/uwsgi;
    scgi_temp_path $1/tmp/scgi;
    include $2;
}
CONF
    "$NGINX" -p "$1" -c "$1/nginx.conf" -e "$1/error.log"
}

KEY=$(python3 -c 'import os; print(os.urandom(32).hex())')
SALT=$(python3 -c 'import os; print(os.urandom(16).hex())')
ORIGIN_PORT=$(free_port); FLEET_PORT=$(free_port); REDIS_PORT=$(free_port)

# Origin: any /src/<id>/<file> is Samples/<file>, so every id is a distinct URL.
mkdir -p "$WORK/origin"
cat > "$WORK/origin/site.conf" <<CONF
server {
    listen 127.0.0.1:$ORIGIN_PORT;
    location /src/ { root $ROOT/Samples; rewrite ^/src/[^/]+/(.+)\$ /\$1 break; }
}
CONF
run_nginx "$WORK/origin" "$WORK/origin/site.conf"

REDIS_ARGS=()
if [ "${FLEET_REDIS:-1}" != 0 ]; then
    redis-server --port "$REDIS_PORT" --bind 127.0.0.1 --save '' --appendonly no --dir "$WORK" \
        --daemonize no --loglevel warning > "$WORK/redis.log" 2>&1 &
    PIDS+=($!); disown
    REDIS_ARGS=(--redis-url "redis://127.0.0.1:$REDIS_PORT/0")
fi

NODE_PORTS=(); NODE_PIDS=(); UPSTREAMS=""
for i in 0 1 2; do
    port=$(free_port)
    HALCYON_KEY=$KEY HALCYON_SALT=$SALT "$BIN" serve --host 127.0.0.1 --port "$port" --allow-loopback \
        --cache-dir "$WORK/node$i" "${REDIS_ARGS[@]}" > "$WORK/node$i.log" 2>&1 &
    NODE_PIDS+=($!); PIDS+=($!); NODE_PORTS+=("$port"); disown
    UPSTREAMS+="server 127.0.0.1:$port max_fails=1 fail_timeout=10s;"$'\n    '
done
for port in "${NODE_PORTS[@]}"; do wait_http "http://127.0.0.1:$port/health" 30; done

mkdir -p "$WORK/fleet"
python3 - "${FLEET_RECIPE:-$ROOT/deploy/nginx/halcyon.conf}" "$WORK/fleet/halcyon.conf" "127.0.0.1:$FLEET_PORT" "$WORK/fleet/cache" "$UPSTREAMS" <<'PY'
import sys
recipe, out, listen, cache, upstreams = sys.argv[1:]
text = open(recipe).read().replace("@LISTEN@", listen).replace("@CACHE_DIR@", cache).replace("@UPSTREAMS@", upstreams.strip())
open(out, "w").write(text)
PY
run_nginx "$WORK/fleet" "$WORK/fleet/halcyon.conf" fleet
wait_http "http://127.0.0.1:$FLEET_PORT/health" 10

SAMPLES=$(cd Samples && ls | grep -E '\.(jpg|png|webp|gif)$' | paste -sd, -)
echo "==> fleet: nginx :$FLEET_PORT → nodes ${NODE_PORTS[*]}, origin :$ORIGIN_PORT, redis ${REDIS_ARGS[*]:-off}"
status=0
HALCYON_KEY=$KEY HALCYON_SALT=$SALT FLEET_PORT=$FLEET_PORT ORIGIN_PORT=$ORIGIN_PORT \
    NODE_PORTS=$(IFS=,; echo "${NODE_PORTS[*]}") NODE_PIDS=$(IFS=,; echo "${NODE_PIDS[*]}") \
    ORIGIN_LOG="$WORK/origin/access.log" FLEET_LOG="$WORK/fleet/access.log" SAMPLES="$SAMPLES" FLEET_REDIS=${FLEET_REDIS:-1} \
    timeout 150 python3 scripts/fleet_load.py || status=$?
if [ $status != 0 ]; then
    echo "==> fleet test failed ($status); node logs:"; tail -n 20 "$WORK"/node*.log "$WORK/fleet/error.log" || true
fi
exit $status

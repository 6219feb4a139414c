# Shared by scripts/test-fleet.sh, bench-fleet.sh and bench-tracing.sh: an origin nginx, redis-server, N
# `halcyon serve` nodes and the recipe's nginx in front, all on loopback, all in $WORK, all killed by
# fleet_cleanup. Source it after setting ROOT, then call fleet_begin.

fleet_install() { # installs nginx, redis-server, python3 (and what else is named) with apt when missing
    local sudo="" need=()
    [ "$(id -u)" = 0 ] || sudo=sudo
    command -v nginx >/dev/null 2>&1 || [ -x /usr/sbin/nginx ] || need+=(nginx)
    command -v redis-server >/dev/null 2>&1 || need+=(redis-server)
    command -v python3 >/dev/null 2>&1 || need+=(python3)
    for tool in "$@"; do command -v "$tool" >/dev/null 2>&1 || need+=("$tool"); done
    if [ ${#need[@]} -gt 0 ]; then
        echo "==> installing ${need[*]} with apt"
        $sudo apt-get update -qq && DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq "${need[@]}"
    fi
    NGINX=$(command -v nginx || echo /usr/sbin/nginx)
}

# Installs what is missing (extra tools as arguments), picks the binary (HALCYON_BIN, else the `debug` or
# `release` build named by $1), makes $WORK (prefix $2) cleaned on exit, a random KEY and SALT, and starts
# the origin serving Samples/.
fleet_begin() {
    local mode=$1 prefix=$2; shift 2
    fleet_install "$@"
    BIN=${HALCYON_BIN:-$(swift build -c "$mode" --show-bin-path)/halcyon}
    [ -x "$BIN" ] || { echo "no halcyon binary at $BIN (run swift build -c $mode --product halcyon)"; exit 1; }
    WORK=$(mktemp -d "/tmp/$prefix.XXXXXX")
    trap fleet_cleanup EXIT
    KEY=$(python3 -c 'import os; print(os.urandom(32).hex())')
    SALT=$(python3 -c 'import os; print(os.urandom(16).hex())')
    start_origin "$ROOT/Samples"
}

# Kills the nginx whose master's pid is in the file, with its workers, cache manager and loader: their
# command lines do not name $WORK, and a master killed alone leaves them running. The master goes first,
# so it cannot start new workers for the ones killed after it.
kill_nginx() { # pid file
    local master
    master=$(cat "$1" 2>/dev/null) || return 0
    [ -n "$master" ] || return 0
    kill -9 "$master" $(pgrep -P "$master") 2>/dev/null || true
}

FLEET_PIDS=()
fleet_cleanup() {
    for pid in "${FLEET_PIDS[@]}"; do kill -9 "$pid" 2>/dev/null || true; done
    for pidfile in "$WORK"/*/nginx.pid; do kill_nginx "$pidfile"; done
    pkill -9 -f "$WORK" 2>/dev/null || true
    if [ "${KEEP_FLEET_WORK:-0}" = 1 ]; then echo "work folder kept: $WORK"; else rm -rf "$WORK"; fi
}

free_port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1]); s.close()'; }

wait_http() { # url, seconds
    for _ in $(seq 1 $(( $2 * 10 ))); do
        curl -fsS -o /dev/null --max-time 1 "$1" 2>/dev/null && return 0
        sleep 0.1
    done
    echo "timed out waiting for $1"; return 1
}

# nginx as this user, every path inside one folder: folder, http-block file, [access log format].
run_nginx() {
    mkdir -p "$1/tmp"
    # Workers run as this user (nginx started by root would switch them to nobody, who cannot use the folder).
    cat > "$1/nginx.conf" <<CONF
user $(id -un) $(id -gn);
worker_processes ${NGINX_WORKERS:-1};
pid $1/nginx.pid;
error_log $1/error.log warn;
events { worker_connections 4096; }
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

# Origin: any /src/<id>/<file> is $1/<file>, so every id is a distinct URL. Sets ORIGIN_PORT.
start_origin() {
    ORIGIN_PORT=$(free_port)
    mkdir -p "$WORK/origin"
    cat > "$WORK/origin/site.conf" <<CONF
server {
    listen 127.0.0.1:$ORIGIN_PORT;
    location /src/ { root $1; rewrite ^/src/[^/]+/(.+)\$ /\$1 break; }
}
CONF
    run_nginx "$WORK/origin" "$WORK/origin/site.conf"
}

# redis-server without persistence. Sets REDIS_PORT.
start_redis() {
    REDIS_PORT=$(free_port)
    redis-server --port "$REDIS_PORT" --bind 127.0.0.1 --save '' --appendonly no --dir "$WORK" \
        --daemonize no --loglevel warning > "$WORK/redis.log" 2>&1 &
    FLEET_PIDS+=($!); disown
}

# Node $1 on port $2 with KEY/SALT and NODE_ARGS, logging to $WORK/node$1.log; sets NODE_PIDS[$1].
start_node() {
    HALCYON_KEY=$KEY HALCYON_SALT=$SALT "$BIN" serve --host 127.0.0.1 --port "$2" --allow-loopback \
        --cache-dir "$WORK/node$1" "${NODE_ARGS[@]}" >> "$WORK/node$1.log" 2>&1 &
    NODE_PIDS[$1]=$!; FLEET_PIDS+=($!); disown
}

# N nodes with KEY/SALT; extra serve arguments after N. Sets NODE_PORTS, NODE_PIDS, NODE_ARGS, UPSTREAMS.
start_nodes() {
    local count=$1; shift
    NODE_PORTS=(); NODE_PIDS=(); NODE_ARGS=("$@"); UPSTREAMS=""
    for i in $(seq 0 $(( count - 1 ))); do
        local port; port=$(free_port)
        NODE_PORTS+=("$port")
        start_node "$i" "$port"
        UPSTREAMS+="server 127.0.0.1:$port max_fails=1 fail_timeout=10s;"$'\n    '
    done
    for port in "${NODE_PORTS[@]}"; do wait_http "http://127.0.0.1:$port/health" 30; done
}

node_alive() { [ -e "/proc/$1" ] && ! grep -q ') Z ' "/proc/$1/stat" 2>/dev/null; } # a zombie is dead

# What a supervisor (deploy/systemd/halcyon@.service) does: starts again, on its own port and cache
# folder, every node whose process is gone, and waits for its /health.
restart_dead_nodes() {
    local restarted=()
    for i in "${!NODE_PORTS[@]}"; do
        node_alive "${NODE_PIDS[$i]}" && continue
        start_node "$i" "${NODE_PORTS[$i]}"
        restarted+=("$i")
    done
    for i in "${restarted[@]}"; do wait_http "http://127.0.0.1:${NODE_PORTS[$i]}/health" 30; done
    [ ${#restarted[@]} = 0 ] || echo "==> restarted node(s) ${restarted[*]}"
}

# The recipe (or $FLEET_RECIPE) in front of the nodes, in $WORK/$1. Sets FLEET_PORT.
start_fleet_nginx() {
    FLEET_PORT=$(free_port)
    mkdir -p "$WORK/$1"
    python3 - "${FLEET_RECIPE:-$ROOT/deploy/nginx/halcyon.conf}" "$WORK/$1/halcyon.conf" "127.0.0.1:$FLEET_PORT" \
        "$WORK/$1/cache" "$UPSTREAMS" <<'PY'
import sys
recipe, out, listen, cache, upstreams = sys.argv[1:]
text = open(recipe).read().replace("@LISTEN@", listen).replace("@CACHE_DIR@", cache).replace("@UPSTREAMS@", upstreams.strip())
open(out, "w").write(text)
PY
    run_nginx "$WORK/$1" "$WORK/$1/halcyon.conf" fleet
    wait_http "http://127.0.0.1:$FLEET_PORT/health" 10
}

#!/usr/bin/env python3
"""Last phase of scripts/test-fleet.sh: how many nodes one request that kills its node reaches.

A trap origin on 127.0.0.1 stands in for a poisonous source. A node that asks it for /poison/... is
found by the TCP connection it opened (the trap sees the node's port; /proc/net/tcp gives the socket's
inode, /proc/<pid>/fd the process holding it) and SIGKILLed before any answer, as if the image had
crashed it. nginx then sends the request on to the next node, which asks the trap again, and so on.

First every node is sent ordinary requests through this nginx, so nginx holds an idle upstream
connection to each, as it does in production. Then one signed request for the trap's image goes
through nginx. The checks: the client gets 502, the request reached exactly the recipe's
proxy_next_upstream_tries nodes (failover happened, and stopped there), and fewer than all of them.

Environment: HALCYON_KEY, HALCYON_SALT, FLEET_PORT, ORIGIN_PORT, NODE_PORTS, NODE_PIDS, POISON_LOG
(this nginx's access log), TRIES (the recipe's proxy_next_upstream_tries). Prints PASS/FAIL lines and
one JSON line; exits 1 on any FAIL. Loopback only; bounded by timeouts.
"""
import json, os, signal, socket, sys, threading, time, urllib.error, urllib.request

from fleet_env import fleet_env
from halcyon_sign import image_path

env = os.environ
KEY, SALT, FLEET, ORIGIN, NODES, PIDS = fleet_env()
TRIES = int(env["TRIES"])
failures = []


def check(ok, text):
    print(("PASS: " if ok else "FAIL: ") + text, flush=True)
    if not ok:
        failures.append(text)


def get(path, timeout=60):
    try:
        with urllib.request.urlopen(FLEET + path, timeout=timeout) as response:
            return response.status, response.read()
    except urllib.error.HTTPError as error:
        return error.code, error.read()
    except Exception as error:  # reset, timeout
        return 0, str(error).encode()


def socket_inode(local_port, remote_port):
    """Inode of the loopback TCP socket local_port → remote_port, from /proc/net/tcp and tcp6."""
    for table in ("/proc/net/tcp", "/proc/net/tcp6"):
        try:
            lines = open(table).read().splitlines()[1:]
        except OSError:
            continue
        for line in lines:
            fields = line.split()
            local, remote = int(fields[1].rsplit(":", 1)[1], 16), int(fields[2].rsplit(":", 1)[1], 16)
            if local == local_port and remote == remote_port and fields[9] != "0":
                return fields[9]
    return None


def node_owning(local_port, remote_port):
    """Index of the node whose process holds that connection, or None."""
    inode = socket_inode(local_port, remote_port)
    if inode is None:
        return None
    target = f"socket:[{inode}]"
    for index, pid in enumerate(PIDS):
        try:
            fds = os.listdir(f"/proc/{pid}/fd")
        except OSError:
            continue
        for fd in fds:
            try:
                if os.readlink(f"/proc/{pid}/fd/{fd}") == target:
                    return index
            except OSError:
                continue
    return None


class Trap:
    """The poisonous origin: every connection asking for /poison/ kills the node that opened it."""

    def __init__(self):
        self.server = socket.socket()
        self.server.bind(("127.0.0.1", 0))
        self.server.listen(16)
        self.port = self.server.getsockname()[1]
        self.reached, self.unknown, self.lock = [], 0, threading.Lock()
        threading.Thread(target=self.serve, daemon=True).start()

    def serve(self):
        while True:
            try:
                conn, peer = self.server.accept()
            except OSError:
                return
            threading.Thread(target=self.handle, args=(conn, peer[1]), daemon=True).start()

    def handle(self, conn, peer_port):
        conn.settimeout(10)
        head = b""
        try:
            while b"\r\n\r\n" not in head and len(head) < 65536:
                chunk = conn.recv(4096)
                if not chunk:
                    break
                head += chunk
        except OSError:
            pass
        if b" /poison/" in head.split(b"\r\n", 1)[0]:
            node = node_owning(peer_port, self.port)
            with self.lock:
                if node is None:
                    self.unknown += 1
                else:
                    self.reached.append(node)
            if node is not None:
                os.kill(PIDS[node], signal.SIGKILL)
                print(f"trap: node {node} (port {NODES[node]}, pid {PIDS[node]}) asked for the poisonous "
                      f"source; SIGKILLed", flush=True)
                time.sleep(0.2)  # the kernel closes the node's sockets; nginx sees its node die
        conn.close()


def alive_pid(pid):
    try:
        return open(f"/proc/{pid}/stat").read().rsplit(")", 1)[1].split()[0] != "Z"
    except OSError:
        return False


def warm_up():
    """Ordinary requests until nginx has sent at least one to every node (so it holds an idle keepalive
    connection to each, as in production). Returns the nodes seen."""
    seen = set()
    for i in range(60):
        status, body = get(image_path("rs:fit:64:64", f"{ORIGIN}/src/warm{i}/badge.png", "png", KEY, SALT), 30)
        if status != 200:
            print(f"warm-up request {i}: {status} {body[:80]!r}", flush=True)
        with open(env["POISON_LOG"]) as log:
            for line in log:
                for addr in line.rsplit('"', 2)[-2].split(","):
                    port = addr.strip().rsplit(":", 1)[-1]
                    if port.isdigit() and int(port) in NODES:
                        seen.add(NODES.index(int(port)))
        if len(seen) == len(NODES):
            break
    return seen


trap = Trap()
seen = warm_up()
check(len(seen) == len(NODES), f"warm-up: nginx sent ordinary requests to {len(seen)} of {len(NODES)} nodes")
poison = image_path("rs:fit:200:200", f"http://127.0.0.1:{trap.port}/poison/7x4000.jpg", "jpg", KEY, SALT)
started = time.time()
status, body = get(poison)
elapsed = time.time() - started
time.sleep(0.5)  # any straggling trap connection is recorded
with trap.lock:
    reached, unknown = list(trap.reached), trap.unknown
upstreams = ""
with open(env["POISON_LOG"]) as log:
    for line in log:
        if "/poison" in line or line.startswith(poison):
            upstreams = line.rsplit('"', 2)[-2]

distinct = sorted(set(reached))
print(f"poisonous request: {len(distinct)} of {len(NODES)} nodes reached (nodes {distinct}), each SIGKILLed; "
      f"client got {status} after {elapsed:.2f} s; nginx tried: {upstreams or '?'}", flush=True)
check(unknown == 0, f"every connection to the trap came from a node ({unknown} from elsewhere)")
check(status == 502, f"the client got 502 ({status})")
expected = len(NODES) if TRIES == 0 else min(TRIES, len(NODES))  # 0: nginx sets no limit
check(len(distinct) == expected,
      f"one request whose node dies under it reached {len(distinct)} nodes: proxy_next_upstream_tries {TRIES} "
      f"allows {expected} (failover to {expected - 1} more, and no further)")
alive = [i for i, pid in enumerate(PIDS) if alive_pid(pid)]
healthy = [i for i in alive if urllib.request.urlopen(f"http://127.0.0.1:{NODES[i]}/health", timeout=10).status == 200]
check(len(distinct) < len(NODES) and healthy == [i for i in range(len(NODES)) if i not in distinct],
      f"it did not reach every node: {len(distinct)} of {len(NODES)} killed; nodes up and healthy: {healthy}")
print(json.dumps({"poison_nodes_reached": len(distinct), "nodes": len(NODES), "tries": TRIES,
                  "client_status": status, "seconds": round(elapsed, 2)}))
sys.exit(1 if failures else 0)

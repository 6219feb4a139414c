#!/usr/bin/env python3
"""Load driver of scripts/test-fleet.sh: signed image URLs through the fleet's nginx, one node
SIGKILLed mid-run, then the fleet checks from what the client, the origin and the nodes saw.

Everything goes to 127.0.0.1 and is bounded: a fixed list of requests, a timeout on each.
Prints PASS/FAIL lines and a summary; exits 1 on any FAIL.
"""
import json, os, random, re, signal, sys, threading, time, urllib.request
from concurrent.futures import ThreadPoolExecutor

from fleet_env import fleet_env
from halcyon_sign import image_path

env = os.environ
KEY, SALT, FLEET, ORIGIN, NODES, PIDS = fleet_env()
VICTIM = int(env.get("VICTIM", "1"))
ORIGIN_LOG = env["ORIGIN_LOG"]
SAMPLES = env["SAMPLES"].split(",")
REDIS = env.get("FLEET_REDIS", "1") != "0"
DISTINCT, REPEATED, REPEATS = 60, 20, 10
MAGIC = (b"\xff\xd8", b"\x89PNG", b"RIFF", b"GIF8")
failures = []


def check(ok, text):
    print(("PASS: " if ok else "FAIL: ") + text, flush=True)
    if not ok:
        failures.append(text)


def signed(options, source):
    return image_path(options, source, "jpg", KEY, SALT)


def source(kind, index):
    return f"{ORIGIN}/src/{kind}{index}/{SAMPLES[index % len(SAMPLES)]}"


def get(base, path, headers=None, timeout=40):
    request = urllib.request.Request(base + path, headers=headers or {})
    try:
        with urllib.request.urlopen(request, timeout=timeout) as response:
            return response.status, response.headers.get("X-Cache-Status", ""), response.read()
    except urllib.error.HTTPError as error:
        return error.code, error.headers.get("X-Cache-Status", ""), error.read()
    except Exception as error:  # connection reset, timeout: a failed request
        return 0, "", str(error).encode()


def metric(port, name):
    status, _, body = get(f"http://127.0.0.1:{port}", "/metrics", timeout=5)
    if status != 200:
        return None
    total = 0.0
    for line in body.decode().splitlines():
        if line.startswith(name + " ") or line.startswith(name + "{"):
            total += float(line.rsplit(" ", 1)[1])
    return total


def origin_hits():
    hits = {}
    with open(ORIGIN_LOG) as log:
        for line in log:
            match = re.search(r'"GET (/src/[^ ]+) ', line)
            if match:
                hits[match.group(1)] = hits.get(match.group(1), 0) + 1
    return hits


def run(paths, kill_after=None):
    results, done, lock = [], [0], threading.Lock()

    def one(path):
        result = get(FLEET, path)
        with lock:
            results.append((path, result))
            done[0] += 1
            if kill_after is not None and done[0] == kill_after:
                os.kill(PIDS[VICTIM], signal.SIGKILL)
                print(f"killed node {VICTIM} (pid {PIDS[VICTIM]}) after {done[0]} requests", flush=True)
        return result

    with ThreadPoolExecutor(max_workers=8) as pool:
        list(pool.map(one, paths))
    return results


options = "rs:fit:160:160"
repeated = [signed(options, source("r", i)) for i in range(REPEATED)]
distinct = [signed(options, source("d", i)) for i in range(DISTINCT)]
started = time.time()

# Phase A: every repeated URL once, so its one computation is done before any node dies.
warm = run(repeated)
# Phase B: the rest, shuffled, with one node killed a third of the way in.
rng = random.Random(17)
mixed = distinct + [path for path in repeated for _ in range(REPEATS - 1)]
rng.shuffle(mixed)
load = run(mixed, kill_after=len(mixed) // 3)
elapsed = time.time() - started
everything = warm + load

bad = [(p, r[0], r[2][:80]) for p, r in everything if r[0] != 200 or not r[2].startswith(MAGIC)]
check(not bad, f"zero failed client requests ({len(everything)} requests, {len(bad)} failed){': ' + str(bad[:3]) if bad else ''}")

hits = origin_hits()
repeated_sources = [f"/src/r{i}/{SAMPLES[i % len(SAMPLES)]}" for i in range(REPEATED)]
counts = [hits.get(s, 0) for s in repeated_sources]
check(all(c == 1 for c in counts), f"every repeated URL fetched from the origin exactly once (counts: min {min(counts)}, max {max(counts)})")
distinct_counts = [hits.get(f"/src/d{i}/{SAMPLES[i % len(SAMPLES)]}", 0) for i in range(DISTINCT)]
twice = sum(1 for c in distinct_counts if c > 1)
check(all(c >= 1 for c in distinct_counts), f"every distinct URL reached the origin (recomputed after the kill: {twice})")

survivors = [port for i, port in enumerate(NODES) if i != VICTIM]
computed = [metric(port, "halcyon_results_computed_total") or 0 for port in survivors]
check(sum(computed) <= DISTINCT + REPEATED, f"results computed on the surviving nodes: {computed} (sum {sum(computed):.0f} ≤ {DISTINCT + REPEATED} URLs)")

statuses = [r[1] for _, r in load]
repeat_statuses = [r[1] for p, r in load if p in set(repeated)]
hit_count = sum(1 for s in repeat_statuses if s in ("HIT", "UPDATING", "STALE"))
# Phase B's repeats all come after phase A computed and cached every repeated URL: each must be a hit.
check(hit_count == len(repeat_statuses), f"nginx cache hits for repeats: {hit_count} of {len(repeat_statuses)}")

victim = f"127.0.0.1:{NODES[VICTIM]}"
retried, after_kill, seen_victim_fail = 0, 0, False
with open(env["FLEET_LOG"]) as log:
    for line in log:
        upstreams = line.rsplit('"', 2)[-2] if line.count('"') >= 2 else ""
        if "," in upstreams:
            retried += 1
            seen_victim_fail = seen_victim_fail or victim in upstreams
print(f"failover: {retried} requests found the killed node {victim} gone and were answered by the next node "
      f"(nginx then kept it out for fail_timeout); the victim appeared in the retried list: {seen_victim_fail}")

if REDIS:
    # Phase C: ask a surviving node directly for every repeated URL (no nginx in between). A node that
    # never computed one must answer it from Redis, not from the origin.
    before = sum(origin_hits().values())
    node = survivors[0]
    direct = [get(f"http://127.0.0.1:{node}", path) for path in repeated]
    check(all(r[0] == 200 for r in direct), f"a surviving node answers every repeated URL directly ({len(direct)})")
    after = sum(origin_hits().values())
    check(after == before, f"no origin fetch for them (origin requests {before} → {after})")
    redis_hits = metric(node, 'halcyon_cache_results_total{type="redis"}') or 0
    check(redis_hits > 0, f"the node served {redis_hits:.0f} of them from Redis")

total = len(everything)
print(json.dumps({
    "requests": total, "failed": len(bad), "seconds": round(elapsed, 2), "req_per_s": round(total / elapsed, 1),
    "origin_requests": sum(hits.values()), "nginx": {s or "-": statuses.count(s) for s in set(statuses)},
    "computed_on_survivors": computed,
}))
sys.exit(1 if failures else 0)

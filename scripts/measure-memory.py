#!/usr/bin/env python3
"""Peak memory of `halcyon serve` per loader and encoder class, and four at once against a budget.

Usage: scripts/measure-memory.py [--binary .build/debug/halcyon] [--inputs DIR] [--budget MiB] [--only NAME,...]
                                 [--skip-single] [--skip-concurrent]

Makes worst-case sources with the vips CLI (7000x7000, flat, so each is small in bytes but large in pixels:
progressive 4:4:4, 4:2:0 and CMYK JPEG, baseline JPEG, interlaced and plain 16-bit and 8-bit PNG, palette PNG,
lossy and lossless WebP, GIF, AVIF, TIFF), serves them from a loopback `python3 -m http.server`, then for each
request class starts a fresh server (`--insecure --allow-loopback`), reads its VmRSS, resets its high-water mark
(`echo 5 > /proc/PID/clear_refs`), makes one request and reads VmHWM: the request's peak is VmHWM - VmRSS before.
The estimates the admission reserves for the same sources are checked against these figures by
MemoryEstimateTests (Tests/HalcyonTests/Server). The concurrent phase starts one server with `--memory-budget` (default 512 MiB) per class, sends four
of the class's request at once (distinct URLs, so nothing coalesces) and reports the statuses and the process's
peak RSS (VmHWM, absolute) against budget + 64 MiB. The B/px column divides by 7000x7000 (the enlarge16 classes'
results have 4000x4000 pixels).

A debug build measures the same big buffers as a release build: they are libvips' and its codecs' (release
builds of the system's libraries); only the Swift side's small allocations differ.
"""
import argparse
import concurrent.futures
import http.client
import os
import subprocess
import sys
import time
import urllib.parse

SIDE = 7000

# (class, source file, options, output extension or "" for the source's format)
DECODE_CLASSES = [
    ("jpeg-progressive-444", "jpeg_progressive.jpg", "rs:fit:300:300", "jpg"),
    ("jpeg-progressive-420", "jpeg_progressive420.jpg", "rs:fit:300:300", "jpg"),
    ("jpeg-progressive-cmyk", "jpeg_progressive_cmyk.jpg", "rs:fit:300:300", "jpg"),
    ("jpeg-baseline", "jpeg_baseline.jpg", "rs:fit:300:300", "jpg"),
    ("jpeg-baseline-cmyk", "jpeg_baseline_cmyk.jpg", "rs:fit:300:300", "jpg"),
    ("png16-interlaced", "png16_interlaced.png", "rs:fit:300:300", "jpg"),
    ("png16", "png16.png", "rs:fit:300:300", "jpg"),
    ("png8-interlaced", "png8_interlaced.png", "rs:fit:300:300", "jpg"),
    ("png8-rgba", "png8.png", "rs:fit:300:300", "jpg"),
    ("png-palette", "png_palette.png", "rs:fit:300:300", "jpg"),
    ("webp-lossy", "webp_lossy.webp", "rs:fit:300:300", "jpg"),
    ("webp-lossless", "webp_lossless.webp", "rs:fit:300:300", "jpg"),
    ("gif", "gif.gif", "rs:fit:300:300", "jpg"),
    ("avif", "avif.avif", "rs:fit:300:300", "jpg"),
    ("tiff", "tiff.tif", "rs:fit:300:300", "jpg"),
]
# Full-size work: the decode at full size plus one encoder of a 7000x7000 result.
ENCODE_CLASSES = [
    ("encode-jpeg", "jpeg_baseline.jpg", "q:80", "jpg"),
    ("encode-png", "jpeg_baseline.jpg", "q:80", "png"),
    ("encode-webp", "jpeg_baseline.jpg", "q:80", "webp"),
    ("encode-avif", "jpeg_baseline.jpg", "q:80", "avif"),
    ("encode-gif", "jpeg_baseline.jpg", "q:80", "gif"),
    ("encode-tiff", "jpeg_baseline.jpg", "q:80", "tiff"),
]
# Whole-size decodes (to JPEG, the lightest encoder).
FULL_CLASSES = [
    ("full-jpeg-progressive-444", "jpeg_progressive.jpg", "q:80", "jpg"),
    ("full-jpeg-progressive-cmyk", "jpeg_progressive_cmyk.jpg", "q:80", "jpg"),
    ("full-png16-interlaced", "png16_interlaced.png", "q:80", "jpg"),
    ("full-png8-interlaced", "png8_interlaced.png", "q:80", "jpg"),
    ("full-png16", "png16.png", "q:80", "jpg"),
    ("full-png8-rgba", "png8.png", "q:80", "jpg"),
    ("full-jpeg-baseline-cmyk", "jpeg_baseline_cmyk.jpg", "q:80", "jpg"),
    ("full-png-palette", "png_palette.png", "q:80", "jpg"),
    ("full-webp-lossy", "webp_lossy.webp", "q:80", "jpg"),
    ("full-webp-lossless", "webp_lossless.webp", "q:80", "jpg"),
    ("full-gif", "gif.gif", "q:80", "jpg"),
    ("full-avif", "avif.avif", "q:80", "jpg"),
    ("full-tiff", "tiff.tif", "q:80", "jpg"),
]
# A small source enlarged to a 7000x7000 result: the encoders after a resize.
ENLARGE_CLASSES = [
    ("enlarge-" + ext, "small.jpg", "rs:fit:7000:7000/el:1", ext) for ext in ["jpg", "png", "webp", "avif", "gif"]
] + [
    # GIF and WebP results are limited to 16 megapixels a frame: 4000x4000.
    ("enlarge16-" + ext, "small.jpg", "rs:fit:4000:4000/el:1", ext) for ext in ["webp", "gif", "avif"]
]
# /info reads the header and a 64-pixel shrink-on-load decode.
INFO_CLASSES = [
    ("info-png16-interlaced", "png16_interlaced.png", "", "info"),
    ("info-jpeg-progressive-444", "jpeg_progressive.jpg", "", "info"),
    ("info-png8-interlaced", "png8_interlaced.png", "", "info"),
]


def run(*args):
    subprocess.run(args, check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)


def make_inputs(folder):
    """The worst-case sources (skipped when present)."""
    os.makedirs(folder, exist_ok=True)
    os.chdir(folder)
    if os.path.exists("tiff.tif"):
        return
    run("vips", "black", "b3.v", str(SIDE), str(SIDE), "--bands", "3")
    run("vips", "linear", "b3.v", "g3.v", "1", "128", "--uchar")
    run("vips", "black", "b4.v", str(SIDE), str(SIDE), "--bands", "4")
    run("vips", "linear", "b4.v", "g4.v", "1", "128", "--uchar")
    run("vips", "jpegsave", "g3.v", "jpeg_progressive.jpg", "--interlace", "--subsample-mode", "off")
    run("vips", "jpegsave", "g3.v", "jpeg_progressive420.jpg", "--interlace")
    run("vips", "jpegsave", "g3.v", "jpeg_baseline.jpg", "--subsample-mode", "off")
    run("vips", "colourspace", "g3.v", "cmyk.v", "cmyk")
    run("vips", "jpegsave", "cmyk.v", "jpeg_progressive_cmyk.jpg", "--interlace")
    run("vips", "jpegsave", "cmyk.v", "jpeg_baseline_cmyk.jpg")
    run("vips", "cast", "g4.v", "g4u.v", "ushort")
    run("vips", "copy", "g4u.v", "g16.v", "--interpretation", "rgb16")
    run("vips", "pngsave", "g16.v", "png16_interlaced.png", "--interlace", "--bitdepth", "16")
    run("vips", "pngsave", "g16.v", "png16.png", "--bitdepth", "16")
    run("vips", "pngsave", "g4.v", "png8_interlaced.png", "--interlace")
    run("vips", "pngsave", "g4.v", "png8.png")
    run("vips", "pngsave", "g3.v", "png_palette.png", "--palette")
    run("vips", "webpsave", "g3.v", "webp_lossy.webp")
    run("vips", "webpsave", "g4.v", "webp_lossless.webp", "--lossless")
    run("vips", "gifsave", "g3.v", "gif.gif")
    run("vips", "heifsave", "g3.v", "avif.avif", "--compression", "av1", "--effort", "0")
    run("vips", "tiffsave", "g4.v", "tiff.tif", "--compression", "deflate")
    run("vips", "crop", "g3.v", "small.v", "0", "0", "1000", "1000")
    run("vips", "jpegsave", "small.v", "small.jpg")
    for name in ["b3.v", "g3.v", "b4.v", "g4.v", "cmyk.v", "g4u.v", "g16.v", "small.v"]:
        os.remove(name)


def status_kib(pid, field):
    with open(f"/proc/{pid}/status") as status:
        for line in status:
            if line.startswith(field + ":"):
                return int(line.split()[1])
    raise RuntimeError(f"no {field} for {pid}")


def get(port, path, timeout=300):
    connection = http.client.HTTPConnection("127.0.0.1", port, timeout=timeout)
    try:
        connection.request("GET", path)
        response = connection.getresponse()
        body = response.read()
        return response.status, body
    finally:
        connection.close()


class Server:
    """One `halcyon serve` on a free port, stopped on exit."""

    def __init__(self, binary, port, budget, in_flight):
        args = [binary, "serve", "--insecure", "--allow-loopback", "--host", "127.0.0.1", "--port", str(port),
                "--memory-budget", str(budget), "--max-in-flight", str(in_flight), "--queue-timeout", "120",
                "--request-timeout", "300", "--max-source-bytes", str(64 << 20)]
        self.port = port
        self.process = subprocess.Popen(args, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
        for _ in range(600):
            try:
                if get(port, "/health", timeout=2)[0] == 200:
                    return
            except OSError:
                pass
            if self.process.poll() is not None:
                raise RuntimeError("server exited: " + self.process.stderr.read().decode()[-2000:])
            time.sleep(0.1)
        raise RuntimeError("server did not start")

    def __enter__(self):
        return self

    def __exit__(self, *_):
        self.process.terminate()
        try:
            self.process.wait(timeout=30)
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.wait()

    def reset_peak(self):
        with open(f"/proc/{self.process.pid}/clear_refs", "w") as refs:
            refs.write("5")

    def rss_mib(self):
        return status_kib(self.process.pid, "VmRSS") / 1024

    def peak_mib(self):
        return status_kib(self.process.pid, "VmHWM") / 1024


def path_for(origin_port, file, options, ext, tag):
    # Percent-encoded, so the tag stays in the source URL (each request its own source: no cache hit, no
    # coalescing) and `@ext` is not read as part of its query.
    source = urllib.parse.quote(f"http://127.0.0.1:{origin_port}/{file}?n={tag}", safe="")
    if ext == "info":
        return f"/info/insecure/{options or 'bh:4:3'}/plain/{source}"
    return f"/insecure/{options}/plain/{source}" + (f"@{ext}" if ext else "")


def measure_single(args, origin_port, cases):
    print(f"{'class':28} {'status':>6} {'base MiB':>9} {'peak MiB':>9} {'+MiB':>7} {'B/px':>6}")
    for index, (name, file, options, ext) in enumerate(cases):
        with Server(args.binary, args.port + index % 50, 100_000, 8) as server:
            # Warm the codecs with a small request of the same format, so their one-time setup is not counted.
            get(server.port, path_for(origin_port, file, "rs:fit:8:8", "jpg", "warm"))
            time.sleep(0.5)
            base = server.rss_mib()
            server.reset_peak()
            status, _ = get(server.port, path_for(origin_port, file, options, ext, "one"))
            peak = server.peak_mib()
            extra = peak - base
            print(f"{name:28} {status:>6} {base:9.1f} {peak:9.1f} {extra:7.1f} {extra * 1048576 / SIDE / SIDE:6.2f}",
                  flush=True)


def measure_concurrent(args, origin_port, cases):
    limit = args.budget + 64
    print(f"\nfour at once, --memory-budget {args.budget} MiB: peak RSS must stay <= {limit} MiB")
    print(f"{'class':28} {'statuses':>22} {'base MiB':>9} {'peak MiB':>9} {'ok':>4} {'secs':>6}")
    worst = 0.0
    for index, (name, file, options, ext) in enumerate(cases):
        with Server(args.binary, args.port + 60 + index % 30, args.budget, 8) as server:
            get(server.port, path_for(origin_port, file, "rs:fit:8:8", "jpg", "warm"))
            time.sleep(0.5)
            base = server.rss_mib()
            server.reset_peak()
            started = time.monotonic()
            with concurrent.futures.ThreadPoolExecutor(4) as pool:
                futures = [pool.submit(get, server.port, path_for(origin_port, file, options, ext, f"c{n}")) for n in range(4)]
                statuses = [f.result()[0] for f in futures]
            seconds = time.monotonic() - started
            peak = server.peak_mib()
            worst = max(worst, peak)
            ok = "yes" if peak <= limit else "NO"
            print(f"{name:28} {','.join(map(str, statuses)):>22} {base:9.1f} {peak:9.1f} {ok:>4} {seconds:6.1f}", flush=True)
    print(f"highest peak RSS: {worst:.1f} MiB against {limit} MiB")
    return worst <= limit


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--binary", default=os.path.join(os.getcwd(), ".build/debug/halcyon"))
    parser.add_argument("--inputs", default="/tmp/halcyon-memory-inputs")
    parser.add_argument("--budget", type=int, default=512)
    parser.add_argument("--port", type=int, default=18300)
    parser.add_argument("--only", default="")
    parser.add_argument("--skip-single", action="store_true")
    parser.add_argument("--skip-concurrent", action="store_true")
    args = parser.parse_args()
    args.binary = os.path.abspath(args.binary)
    make_inputs(args.inputs)
    cases = DECODE_CLASSES + ENCODE_CLASSES + FULL_CLASSES + ENLARGE_CLASSES + INFO_CLASSES
    if args.only:
        wanted = set(args.only.split(","))
        cases = [case for case in cases if case[0] in wanted]
    origin_port = args.port + 99
    origin = subprocess.Popen([sys.executable, "-m", "http.server", str(origin_port), "--bind", "127.0.0.1",
                               "--directory", args.inputs], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        time.sleep(1)
        if not args.skip_single:
            measure_single(args, origin_port, cases)
        ok = True
        if not args.skip_concurrent:
            ok = measure_concurrent(args, origin_port, cases)
    finally:
        origin.terminate()
        origin.wait()
    sys.exit(0 if ok else 1)


if __name__ == "__main__":
    main()

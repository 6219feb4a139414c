#!/usr/bin/env python3
"""Makes the conformance corpus and its manifest, deterministically.

    python3 Tests/Fixtures/Conformance/generate.py

Writes, next to this script:

  pngsuite/   PngSuite images (Willem van Schaik's test suite, freely
              redistributable) as carried by pypng's `pngsuite.py`, taken from
              the pypng 0.20220715.0 source distribution on PyPI. That module
              holds the basic set (every colour type and bit depth, interlaced
              and not) but none of PngSuite's corrupt `x*` files.
  pngcorrupt/ A corrupt set modelled on PngSuite's `x*` files (same names and
              same defects), generated here from clean PNGs this script writes:
              bad signature bytes, CR/LF damage, bad IHDR CRC, bad colour
              type, bad bit depths, missing IDAT, bad IDAT CRC, zero-length
              IDAT, truncation.
  pnggen/     PNGs written by the small PNG writer below for every colour
              type / bit depth pair (0: 1,2,4,8,16; 2: 8,16; 3: 1,2,4,8;
              4: 8,16; 6: 8,16), each plain and Adam7-interlaced, at an odd
              size (13x7) so interlace passes are partial; palettes carry tRNS.
  edge/       Edge cases made with Pillow: 1x1 images, 16-bit PNG, CMYK and
              progressive JPEG, EXIF orientations 1-8, grey+alpha, palette
              with transparency, animated GIF/WebP, a zero-size GIF, truncated
              JPEG/PNG/WebP, wrong magic, empty file.
  manifest.json  file -> expected width/height/frames/format, or expected
              error kind (the `HalcyonError.ProcessorErrorReason` case name).

Expected sizes come from what this script writes (or, for PngSuite, from the
IHDR chunk it parses), never from running Halcyon.

Requires Pillow. Fetching PngSuite needs `pip download` (PyPI) unless
pngsuite/ is already complete; pass --pypng-sdist PATH to use a local copy.
"""

import argparse
import glob
import io
import json
import os
import struct
import subprocess
import sys
import tarfile
import tempfile
import zlib

from PIL import Image

HERE = os.path.dirname(os.path.abspath(__file__))
PYPNG_VERSION = "0.20220715.0"
MANIFEST = []


def write(relative, data):
    path = os.path.join(HERE, relative)
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with open(path, "wb") as handle:
        handle.write(data)
    return relative


def expect_image(relative, width, height, fmt, frames=1, **extra):
    entry = {"file": relative, "expect": "image", "format": fmt, "width": width, "height": height, "frames": frames}
    entry.update(extra)
    MANIFEST.append(entry)


def expect_error(relative, kind, fmt, note):
    MANIFEST.append({"file": relative, "expect": "error", "error": kind, "format": fmt, "note": note})


# MARK: - A minimal PNG writer (full control over every byte)


def chunk(kind, data, crc=None):
    body = kind + data
    value = zlib.crc32(body) & 0xFFFFFFFF if crc is None else crc
    return struct.pack(">I", len(data)) + body + struct.pack(">I", value)


SIGNATURE = b"\x89PNG\r\n\x1a\n"
CHANNELS = {0: 1, 2: 3, 3: 1, 4: 2, 6: 4}
ADAM7 = [(0, 0, 8, 8), (4, 0, 8, 8), (0, 4, 4, 8), (2, 0, 4, 4), (0, 2, 2, 4), (1, 0, 2, 2), (0, 1, 1, 2)]


def sample(x, y, c, depth, width, height):
    """A deterministic pattern value that fits in `depth` bits."""
    top = (1 << depth) - 1
    return ((x * 7 + y * 13 + c * 29) * (top // 15 + 1) + (x ^ y)) % (top + 1)


def pack_row(values, depth):
    if depth == 16:
        return b"".join(struct.pack(">H", v) for v in values)
    if depth == 8:
        return bytes(values)
    out = bytearray()
    per_byte = 8 // depth
    for start in range(0, len(values), per_byte):
        byte = 0
        group = values[start:start + per_byte]
        for index, value in enumerate(group):
            byte |= value << (8 - depth * (index + 1))
        out.append(byte)
    return bytes(out)


def raw_scanlines(width, height, colour, depth, interlaced):
    channels = CHANNELS[colour]

    def row(y, xs):
        values = []
        for x in xs:
            for c in range(channels):
                values.append(sample(x, y, c, depth, width, height))
        return b"\x00" + pack_row(values, depth)

    if not interlaced:
        return b"".join(row(y, range(width)) for y in range(height))
    out = b""
    for x0, y0, dx, dy in ADAM7:
        xs = list(range(x0, width, dx))
        if not xs:
            continue
        for y in range(y0, height, dy):
            out += row(y, xs)
    return out


def make_png(width, height, colour, depth, interlaced=False, ihdr_crc=None, idat_crc=None,
             idat=True, idat_data=None, header_colour=None, header_depth=None):
    header = struct.pack(">IIBBBBB", width, height,
                         depth if header_depth is None else header_depth,
                         colour if header_colour is None else header_colour,
                         0, 0, 1 if interlaced else 0)
    out = SIGNATURE + chunk(b"IHDR", header, ihdr_crc)
    if colour == 3:
        entries = 1 << depth
        palette = b"".join(bytes(((i * 37) % 256, (i * 91) % 256, (255 - i * 53) % 256)) for i in range(entries))
        out += chunk(b"PLTE", palette)
        out += chunk(b"tRNS", bytes((i * 255 // max(1, entries - 1)) for i in range(entries)))
    if idat:
        data = idat_data if idat_data is not None else zlib.compress(raw_scanlines(width, height, colour, depth, interlaced), 9)
        out += chunk(b"IDAT", data, idat_crc)
    out += chunk(b"IEND", b"")
    return out


# MARK: - PngSuite (from pypng on PyPI)


def pngsuite_images(sdist):
    if sdist is None:
        work = tempfile.mkdtemp(prefix="pypng-")
        subprocess.run([sys.executable, "-m", "pip", "download", "--no-deps", "--no-binary", ":all:",
                        "-d", work, f"pypng=={PYPNG_VERSION}"], check=True, stdout=subprocess.DEVNULL)
        sdist = glob.glob(os.path.join(work, "pypng-*.tar.gz"))[0]
    with tarfile.open(sdist) as archive:
        member = next(m for m in archive.getmembers() if m.name.endswith("code/pngsuite.py"))
        source = archive.extractfile(member).read()
    # Run only `_dehex` and the `png = {...}` table, not the module's command-line code.
    import ast

    tree = ast.parse(source)
    keep = [node for node in tree.body
            if (isinstance(node, ast.FunctionDef) and node.name == "_dehex")
            or (isinstance(node, ast.Assign) and any(getattr(t, "id", None) == "png" for t in node.targets))]
    namespace = {}
    exec(compile(ast.Module(body=keep, type_ignores=[]), "pngsuite.py", "exec"), namespace)
    return namespace["png"]


def add_pngsuite(sdist):
    folder = os.path.join(HERE, "pngsuite")
    existing = sorted(glob.glob(os.path.join(folder, "*.png")))
    if existing and sdist is None:
        images = {os.path.basename(p)[:-4]: open(p, "rb").read() for p in existing}
    else:
        images = pngsuite_images(sdist)
    for name in sorted(images):
        data = images[name]
        relative = write(f"pngsuite/{name}.png", data)
        width, height = struct.unpack(">II", data[16:24])
        expect_image(relative, width, height, "png")


# MARK: - Generated PNGs: every colour type and bit depth


def add_generated_pngs():
    for colour, depths in [(0, [1, 2, 4, 8, 16]), (2, [8, 16]), (3, [1, 2, 4, 8]), (4, [8, 16]), (6, [8, 16])]:
        for depth in depths:
            for interlaced in (False, True):
                kind = {0: "g", 2: "c", 3: "p", 4: "a", 6: "a"}[colour]
                name = f"pnggen/g{'i' if interlaced else 'n'}{colour}{kind}{depth:02d}.png"
                expect_image(write(name, make_png(13, 7, colour, depth, interlaced)), 13, 7, "png")


# MARK: - Corrupt PNGs modelled on PngSuite's x-files


def add_corrupt_pngs():
    grey1 = make_png(32, 32, 0, 1)
    grey4 = make_png(32, 32, 0, 4)
    grey8 = make_png(32, 32, 0, 8)
    rgb8 = make_png(32, 32, 2, 8)

    def patched(data, offset, value):
        return data[:offset] + bytes([value]) + data[offset + 1:]

    bad_magic = "the signature is not PNG's, so no loader claims it"
    for name, offset, value in [("xs1n0g01", 0, 0x88), ("xs2n0g01", 1, 0x51), ("xs4n0g01", 4, 0x0A), ("xs7n0g01", 7, 0x0B)]:
        expect_error(write(f"pngcorrupt/{name}.png", patched(grey1, offset, value)), "unsupportedFormat", "unknown", bad_magic)
    # Transferred in text mode: LF became CR LF, or CR LF became LF (signature bytes 4..7).
    expect_error(write("pngcorrupt/xcrn0g04.png", grey4.replace(b"\n", b"\r\n")), "unsupportedFormat", "unknown", bad_magic)
    expect_error(write("pngcorrupt/xlfn0g04.png", grey4.replace(b"\r\n", b"\n")), "unsupportedFormat", "unknown", bad_magic)

    corrupt = [
        ("xhdn0g08", make_png(32, 32, 0, 8, ihdr_crc=0x12345678), "IHDR CRC is wrong"),
        ("xc1n0g08", make_png(32, 32, 0, 8, header_colour=1), "colour type 1 does not exist"),
        ("xc9n2c08", make_png(32, 32, 2, 8, header_colour=9), "colour type 9 does not exist"),
        ("xd0n2c08", make_png(32, 32, 2, 8, header_depth=0), "bit depth 0"),
        ("xd3n2c08", make_png(32, 32, 2, 8, header_depth=3), "bit depth 3"),
        ("xd9n2c08", make_png(32, 32, 2, 8, header_depth=99), "bit depth 99"),
        ("xdtn0g01", make_png(32, 32, 0, 1, idat=False), "no IDAT chunk"),
        ("xcsn0g01", make_png(32, 32, 0, 1, idat_crc=0xDEADBEEF), "IDAT CRC is wrong"),
        ("xzln0g08", make_png(32, 32, 0, 8, idat_data=b""), "zero-length IDAT"),
        ("xzdn0g08", make_png(32, 32, 0, 8, idat_data=b"\x78\x9c\xff\xff\xff\xff"), "IDAT is not a zlib stream"),
        ("xshn0g08", make_png(32, 32, 0, 8, idat_data=zlib.compress(b"\x00" * 33 * 5)), "IDAT has 5 of 32 rows"),
        ("xtrn2c08", rgb8[: len(rgb8) // 2], "cut in the middle of IDAT"),
        ("xthn0g08", grey8[:20], "cut inside IHDR"),
    ]
    for name, data, note in corrupt:
        expect_error(write(f"pngcorrupt/{name}.png", data), "corruptData", "png", note)


# MARK: - Pillow edge cases


def encoded(image, fmt, **options):
    buffer = io.BytesIO()
    image.save(buffer, fmt, **options)
    return buffer.getvalue()


def gradient(width, height, mode="RGB"):
    image = Image.new("RGB", (width, height))
    image.putdata([(x * 255 // max(1, width - 1), y * 255 // max(1, height - 1), 100)
                   for y in range(height) for x in range(width)])
    return image.convert(mode)


# Corner blocks of the orientation image, stored (not displayed) position -> colour.
MARK = 8
ORIENT_W, ORIENT_H = 48, 32
MARKERS = {"topLeft": (255, 0, 0), "topRight": (0, 255, 0), "bottomLeft": (0, 0, 255)}


def orientation_source():
    image = Image.new("RGB", (ORIENT_W, ORIENT_H), (255, 255, 255))
    corners = {"topLeft": (0, 0), "topRight": (ORIENT_W - MARK, 0), "bottomLeft": (0, ORIENT_H - MARK)}
    for key, (x, y) in corners.items():
        image.paste(MARKERS[key], (x, y, x + MARK, y + MARK))
    return image


def displayed_point(orientation, x, y, w, h):
    """Where stored pixel (x, y) of a w x h image shows after EXIF orientation."""
    return {
        1: (x, y),
        2: (w - 1 - x, y),
        3: (w - 1 - x, h - 1 - y),
        4: (x, h - 1 - y),
        5: (y, x),
        6: (h - 1 - y, x),
        7: (h - 1 - y, w - 1 - x),
        8: (y, w - 1 - x),
    }[orientation]


def add_orientations():
    from PIL import ImageOps

    source = orientation_source()
    centres = {"topLeft": (MARK // 2, MARK // 2), "topRight": (ORIENT_W - 1 - MARK // 2, MARK // 2),
               "bottomLeft": (MARK // 2, ORIENT_H - 1 - MARK // 2)}
    for orientation in range(1, 9):
        exif = Image.Exif()
        exif[0x0112] = orientation
        data = encoded(source, "JPEG", quality=95, exif=exif.tobytes(), subsampling=0)
        swapped = orientation >= 5
        width, height = (ORIENT_H, ORIENT_W) if swapped else (ORIENT_W, ORIENT_H)
        markers = []
        shown = ImageOps.exif_transpose(Image.open(io.BytesIO(data))).convert("RGB")
        assert shown.size == (width, height), (orientation, shown.size)
        for key, (x, y) in centres.items():
            dx, dy = displayed_point(orientation, x, y, ORIENT_W, ORIENT_H)
            # Cross-check the table against Pillow's own EXIF transpose.
            got = shown.getpixel((dx, dy))
            assert all(abs(a - b) < 40 for a, b in zip(got, MARKERS[key])), (orientation, key, got)
            markers.append({"x": dx, "y": dy, "rgb": list(MARKERS[key])})
        expect_image(write(f"edge/orientation-{orientation}.jpg", data), width, height, "jpeg",
                     orientation=orientation, markers=markers)


def zero_size_gif():
    # Header, a 0x0 logical screen with a 2-colour global table, a 0x0 image, trailer.
    screen = b"GIF89a" + struct.pack("<HHBBB", 0, 0, 0x80, 0, 0) + b"\x00\x00\x00\xff\xff\xff"
    image = b"\x2c" + struct.pack("<HHHHB", 0, 0, 0, 0, 0) + b"\x02\x02\x44\x01\x00"
    return screen + image + b"\x3b"


def add_edge_cases():
    small = Image.new("RGB", (1, 1), (200, 30, 40))
    expect_image(write("edge/1x1.png", encoded(small, "PNG")), 1, 1, "png")
    expect_image(write("edge/1x1.jpg", encoded(small, "JPEG", quality=90)), 1, 1, "jpeg")
    expect_image(write("edge/1x1.gif", encoded(small, "GIF")), 1, 1, "gif")
    expect_image(write("edge/1x1.webp", encoded(small, "WEBP", lossless=True)), 1, 1, "webp")

    expect_image(write("edge/grey16.png", encoded(gradient(40, 24, "L").convert("I;16"), "PNG")), 40, 24, "png")
    expect_image(write("edge/rgba16.png", make_png(21, 11, 6, 16)), 21, 11, "png")
    expect_image(write("edge/cmyk.jpg", encoded(gradient(40, 24, "CMYK"), "JPEG", quality=90)), 40, 24, "jpeg")
    expect_image(write("edge/progressive.jpg", encoded(gradient(64, 40), "JPEG", quality=85, progressive=True)), 64, 40, "jpeg")
    expect_image(write("edge/grey-alpha.png", encoded(gradient(30, 20, "LA"), "PNG")), 30, 20, "png", alpha=True)
    palette = gradient(30, 20).quantize(16)
    expect_image(write("edge/palette-trns.png", encoded(palette, "PNG", transparency=0)), 30, 20, "png", alpha=True)
    expect_image(write("edge/interlaced.png", make_png(37, 23, 2, 8, interlaced=True)), 37, 23, "png")
    add_orientations()

    frames = [Image.new("RGB", (20, 10), (i * 60, 255 - i * 60, 30)) for i in range(3)]
    expect_image(write("edge/animated.gif", encoded(frames[0], "GIF", save_all=True, append_images=frames[1:],
                                                    duration=[50, 100, 150], loop=0)), 20, 10, "gif", frames=3)
    expect_image(write("edge/animated.webp", encoded(frames[0], "WEBP", save_all=True, append_images=frames[1:],
                                                     duration=[50, 100, 150], loop=0, lossless=True)), 20, 10, "webp", frames=3)

    # libnsgif (libvips' GIF loader) clamps an empty canvas to 1x1, as browsers
    # draw nothing for it: Halcyon returns that one pixel instead of an error.
    expect_image(write("edge/zero-size.gif", zero_size_gif()), 1, 1, "gif",
                 note="0x0 screen and 0x0 image: libnsgif makes a 1x1 canvas")
    picture = gradient(120, 80)
    jpeg = encoded(picture, "JPEG", quality=90)
    png = encoded(picture, "PNG")
    webp = encoded(picture, "WEBP", quality=80)
    expect_error(write("edge/truncated.jpg", jpeg[: len(jpeg) // 2]), "corruptData", "jpeg", "half of a baseline JPEG")
    expect_error(write("edge/truncated.png", png[: len(png) // 2]), "corruptData", "png", "half of a PNG")
    expect_error(write("edge/truncated.webp", webp[: len(webp) // 2]), "corruptData", "webp", "half of a lossy WebP")
    expect_error(write("edge/headers-only.jpg", jpeg[:200]), "corruptData", "jpeg", "JPEG cut before the scan")
    expect_error(write("edge/wrong-magic.png", b"\x89PNX\r\n\x1a\n" + png[8:]), "unsupportedFormat", "unknown",
                 "a PNG whose signature says PNX")
    expect_error(write("edge/text.jpg", b"this is not an image, whatever the name says\n"), "unsupportedFormat", "unknown",
                 "text named .jpg")
    expect_error(write("edge/empty.png", b""), "emptyData", "unknown", "no bytes at all")


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--pypng-sdist", help=f"path to pypng-{PYPNG_VERSION}.tar.gz (else pngsuite/ or pip download)")
    args = parser.parse_args()
    add_pngsuite(args.pypng_sdist)
    add_generated_pngs()
    add_corrupt_pngs()
    add_edge_cases()
    MANIFEST.sort(key=lambda entry: entry["file"])
    with open(os.path.join(HERE, "manifest.json"), "w") as handle:
        json.dump({"generator": "generate.py", "pngsuiteSource": f"PyPI pypng=={PYPNG_VERSION} code/pngsuite.py",
                   "files": MANIFEST}, handle, indent=1, sort_keys=True)
        handle.write("\n")
    total = sum(os.path.getsize(os.path.join(HERE, e["file"])) for e in MANIFEST)
    print(f"{len(MANIFEST)} files, {total} bytes")


if __name__ == "__main__":
    main()

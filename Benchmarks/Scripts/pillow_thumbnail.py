"""Pillow's side of ThumbnailBenchmark and CLIBenchmark: fit each JPEG into a square and save it as JPEG.

Usage: python3 pillow_thumbnail.py [--size N] [--quality Q] OUTPUT_DIR INPUT.jpg [INPUT.jpg ...]
(defaults: 300 px, quality 75)

Uses Image.thumbnail(), which lets the JPEG decoder shrink on load (draft mode)
before resampling, the same work DownsamplingImageProcessor and vipsthumbnail do.
"""
import argparse
import os
import sys

from PIL import Image


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--size", type=int, default=300)
    parser.add_argument("--quality", type=int, default=75)
    parser.add_argument("output")
    parser.add_argument("inputs", nargs="+")
    arguments = parser.parse_args()
    for path in arguments.inputs:
        with Image.open(path) as image:
            image.thumbnail((arguments.size, arguments.size))
            image.save(os.path.join(arguments.output, os.path.basename(path)), "JPEG", quality=arguments.quality)
    return 0


if __name__ == "__main__":
    sys.exit(main())

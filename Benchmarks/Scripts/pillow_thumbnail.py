"""Pillow's side of ThumbnailBenchmark: fit each JPEG into 300x300 and save it at quality 75.

Usage: python3 pillow_thumbnail.py OUTPUT_DIR INPUT.jpg [INPUT.jpg ...]

Uses Image.thumbnail(), which lets the JPEG decoder shrink on load (draft mode)
before resampling, the same work DownsamplingImageProcessor and vipsthumbnail do.
"""
import os
import sys

from PIL import Image


def main() -> int:
    output, inputs = sys.argv[1], sys.argv[2:]
    for path in inputs:
        with Image.open(path) as image:
            image.thumbnail((300, 300))
            image.save(os.path.join(output, os.path.basename(path)), "JPEG", quality=75)
    return 0


if __name__ == "__main__":
    sys.exit(main())

#!/usr/bin/env bash
# Writes Tests/Fixtures/Degenerate: every still format and variant Halcyon decodes, in degenerate shapes
# (1x1, 1x300, 300x1, 7x4000, 4000x7, 2x3), made with the vips command-line tool (Debian's libvips-tools).
# Animated WebP and GIF are made by the tests themselves (DegenerateShapeTests). The files are committed;
# run this again only to change the set.
set -euo pipefail
cd "$(dirname "$0")/.."
out=Tests/Fixtures/Degenerate
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
mkdir -p "$out"
rm -f "$out"/*

for shape in 1x1 1x300 300x1 7x4000 4000x7 2x3; do
    w=${shape%x*} h=${shape#*x} v="$work/$shape"
    # Three channels of diagonal stripes, so every pixel differs from its neighbours.
    vips xyz "$v-xy.v" "$w" "$h"
    vips extract_band "$v-xy.v" "$v-x.v" 0
    vips extract_band "$v-xy.v" "$v-y.v" 1
    vips add "$v-x.v" "$v-y.v" "$v-s.v"
    vips bandjoin "$v-x.v $v-y.v $v-s.v" "$v-j.v"
    vips remainder_const "$v-j.v" "$v-m.v" 256
    vips cast "$v-m.v" "$v-c.v" uchar
    vips copy "$v-c.v" "$v-rgb.v" --interpretation srgb
    vips extract_band "$v-rgb.v" "$v-grey0.v" 0
    vips copy "$v-grey0.v" "$v-grey.v" --interpretation b-w
    vips bandjoin_const "$v-rgb.v" "$v-rgba.v" 160
    vips bandjoin_const "$v-rgb.v" "$v-k.v" 30
    vips copy "$v-k.v" "$v-cmyk.v" --interpretation cmyk
    vips linear "$v-rgb.v" "$v-l16.v" 257 0
    vips cast "$v-l16.v" "$v-c16.v" ushort
    vips copy "$v-c16.v" "$v-rgb16.v" --interpretation rgb16

    vips jpegsave "$v-rgb.v" "$out/jpeg-baseline-$shape.jpg" --Q 85 --strip
    vips jpegsave "$v-rgb.v" "$out/jpeg-progressive-$shape.jpg" --Q 85 --interlace --strip
    vips jpegsave "$v-grey.v" "$out/jpeg-grey-$shape.jpg" --Q 85 --strip
    vips jpegsave "$v-cmyk.v" "$out/jpeg-cmyk-$shape.jpg" --Q 85 --strip
    vips pngsave "$v-rgb.v" "$out/png-8bit-$shape.png" --strip
    vips pngsave "$v-rgb16.v" "$out/png-16bit-$shape.png" --strip
    vips pngsave "$v-rgb.v" "$out/png-palette-$shape.png" --palette --strip
    vips pngsave "$v-rgb.v" "$out/png-interlaced-$shape.png" --interlace --strip
    vips pngsave "$v-rgba.v" "$out/png-alpha-$shape.png" --strip
    vips webpsave "$v-rgb.v" "$out/webp-lossy-$shape.webp" --Q 75 --strip
    vips webpsave "$v-rgba.v" "$out/webp-lossless-$shape.webp" --lossless --strip
    vips gifsave "$v-rgb.v" "$out/gif-$shape.gif"
    vips heifsave "$v-rgb.v" "$out/avif-$shape.avif" --compression av1 --Q 60 --strip
    vips tiffsave "$v-rgb.v" "$out/tiff-$shape.tif" --compression deflate --strip
done
ls "$out" | wc -l
du -sh "$out"

#!/usr/bin/env bash
# The benchmarks' real-photograph set: the twelve 2560×1600 photographs that Debian's
# plasma-workspace-wallpapers package ships (KDE's wallpapers: landscapes, leaves, cups, water;
# baseline and progressive JPEG as published), with a PNG and a WebP (Q=90) copy of each, made by
# the vips CLI from the same pixels.
#
# Usage: scripts/bench-photos.sh FOLDER   (writes FOLDER/photo-<name>.{jpg,png,webp}; reuses a
#        complete folder). Needs apt-get (the package is only downloaded, not installed), dpkg-deb
#        and vips (libvips-tools).
set -euo pipefail

folder=${1:?usage: bench-photos.sh FOLDER}
names=(Autumn BytheWater ColdRipple ColorfulCups DarkestHour EveningGlow FallenLeaf Grey Kite OneStandsOut Path summer_1am)

complete=1
for name in "${names[@]}"; do
    lower=$(echo "$name" | tr '[:upper:]' '[:lower:]')
    for ext in jpg png webp; do [ -s "$folder/photo-$lower.$ext" ] || complete=0; done
done
[ "$complete" = 1 ] && exit 0

command -v vips >/dev/null || { echo "bench-photos: the vips CLI is needed (apt-get install libvips-tools)" >&2; exit 1; }
mkdir -p "$folder"
download=$(mktemp -d)
trap 'rm -rf "$download"' EXIT
chmod 777 "$download"
(cd "$download" && apt-get download plasma-workspace-wallpapers >/dev/null 2>&1) || {
    apt-get update -qq >/dev/null 2>&1 || true
    (cd "$download" && apt-get download plasma-workspace-wallpapers >/dev/null)
}
dpkg-deb -x "$download"/plasma-workspace-wallpapers_*.deb "$download/root"
for name in "${names[@]}"; do
    lower=$(echo "$name" | tr '[:upper:]' '[:lower:]')
    source="$download/root/usr/share/wallpapers/$name/contents/images/2560x1600.jpg"
    [ -s "$source" ] || { echo "bench-photos: $source is missing from the package" >&2; exit 1; }
    cp -L "$source" "$folder/photo-$lower.jpg"
    vips copy "$source" "$folder/photo-$lower.png" 2>/dev/null
    vips copy "$source" "$folder/photo-$lower.webp[Q=90]" 2>/dev/null
done
echo "bench-photos: ${#names[@]} photographs (JPEG, PNG and WebP copies) in $folder"

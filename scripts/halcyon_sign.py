"""Signed `halcyon serve` image paths, as the server verifies them: HMAC-SHA256 with the key over salt +
path, URL-safe base64 without padding (see URLSigner). Shared by the fleet test and the fleet benchmarks."""
import base64, hashlib, hmac


def _b64(data):
    return base64.urlsafe_b64encode(data).decode().rstrip("=")


def image_path(options, source, ext, key, salt):
    """`/{signature}/{options}/{base64 source}.{ext}`; key and salt are bytes."""
    tail = f"/{options}/{_b64(source.encode())}.{ext}"
    return "/" + _b64(hmac.new(key, salt + tail.encode(), hashlib.sha256).digest()) + tail

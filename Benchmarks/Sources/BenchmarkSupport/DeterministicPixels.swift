/// RGBA pixels from a xorshift generator seeded by `seed`: a gradient with `noise` added,
/// so encoded sizes are realistic and every seed gives a different image.
public func deterministicPixels(seed: Int, width: Int, height: Int, noise: Int) -> [UInt8] {
    var state = UInt64(truncatingIfNeeded: seed) &* 0x9E37_79B9_7F4A_7C15 | 1
    var out = [UInt8](repeating: 255, count: width * height * 4)
    for y in 0..<height {
        for x in 0..<width {
            state ^= state << 13
            state ^= state >> 7
            state ^= state << 17
            let base = (x * 255 / width + y * 255 / height + seed * 37) & 0xff
            let index = (y * width + x) * 4
            for channel in 0..<3 {
                let jitter = Int((state >> (UInt64(channel) * 8)) & 0xff) % (noise + 1)
                out[index + channel] = UInt8((base + channel * 80 + jitter) & 0xff)
            }
        }
    }
    return out
}

/// The 64-bit XXH64 hash (seed 0) that guards disk cache entries against corruption.
///
/// Chosen over CRC32 or SHA-256 because it runs at memory speed in plain
/// Swift, so checking every payload on every disk hit stays cheap; it is not
/// a cryptographic hash and does not need to be: it detects torn, truncated
/// or bit-flipped entries, not an attacker who can write the cache directory.
enum EntryChecksum {
    private static let prime1: UInt64 = 0x9E37_79B1_85EB_CA87
    private static let prime2: UInt64 = 0xC2B2_AE3D_27D4_EB4F
    private static let prime3: UInt64 = 0x1656_67B1_9E37_79F9
    private static let prime4: UInt64 = 0x85EB_CA77_C2B2_AE63
    private static let prime5: UInt64 = 0x27D4_EB2F_1656_67C5

    /// The hash of `bytes`.
    static func hash(_ bytes: UnsafeRawBufferPointer) -> UInt64 {
        var state = State()
        state.update(bytes)
        return state.finish()
    }

    /// The hash of the concatenation of `parts`, without joining them.
    static func hash(_ parts: UnsafeRawBufferPointer...) -> UInt64 {
        var state = State()
        for part in parts { state.update(part) }
        return state.finish()
    }

    @inline(__always)
    private static func round(_ accumulator: UInt64, _ input: UInt64) -> UInt64 {
        ((accumulator &+ input &* prime2) << 31 | (accumulator &+ input &* prime2) >> 33) &* prime1
    }

    @inline(__always)
    private static func merge(_ hash: UInt64, _ lane: UInt64) -> UInt64 {
        (hash ^ round(0, lane)) &* prime1 &+ prime4
    }

    @inline(__always)
    private static func rotate(_ value: UInt64, _ bits: UInt64) -> UInt64 {
        value << bits | value >> (64 - bits)
    }

    /// Streaming XXH64 state: 32-byte stripes through four lanes, tail kept in `buffer`.
    struct State {
        private var v1: UInt64 = EntryChecksum.prime1 &+ EntryChecksum.prime2
        private var v2: UInt64 = EntryChecksum.prime2
        private var v3: UInt64 = 0
        private var v4: UInt64 = 0 &- EntryChecksum.prime1
        private var total: UInt64 = 0
        private var buffer: (UInt64, UInt64, UInt64, UInt64) = (0, 0, 0, 0)
        private var buffered = 0

        mutating func update(_ bytes: UnsafeRawBufferPointer) {
            guard let base = bytes.baseAddress, bytes.count > 0 else { return }
            total &+= UInt64(bytes.count)
            var offset = 0
            let count = bytes.count
            if buffered > 0 {
                let take = min(32 - buffered, count)
                withUnsafeMutableBytes(of: &buffer) { stripe in
                    stripe.baseAddress.unsafelyUnwrapped.advanced(by: buffered).copyMemory(from: base, byteCount: take)
                }
                buffered += take
                offset = take
                guard buffered == 32 else { return }
                let (a, b, c, d) = buffer
                v1 = EntryChecksum.round(v1, UInt64(littleEndian: a))
                v2 = EntryChecksum.round(v2, UInt64(littleEndian: b))
                v3 = EntryChecksum.round(v3, UInt64(littleEndian: c))
                v4 = EntryChecksum.round(v4, UInt64(littleEndian: d))
                buffered = 0
            }
            var a = v1, b = v2, c = v3, d = v4
            while count - offset >= 32 {
                let p = base + offset
                a = EntryChecksum.round(a, UInt64(littleEndian: p.loadUnaligned(as: UInt64.self)))
                b = EntryChecksum.round(b, UInt64(littleEndian: p.loadUnaligned(fromByteOffset: 8, as: UInt64.self)))
                c = EntryChecksum.round(c, UInt64(littleEndian: p.loadUnaligned(fromByteOffset: 16, as: UInt64.self)))
                d = EntryChecksum.round(d, UInt64(littleEndian: p.loadUnaligned(fromByteOffset: 24, as: UInt64.self)))
                offset += 32
            }
            v1 = a; v2 = b; v3 = c; v4 = d
            let rest = count - offset
            if rest > 0 {
                withUnsafeMutableBytes(of: &buffer) { stripe in
                    stripe.baseAddress.unsafelyUnwrapped.copyMemory(from: base + offset, byteCount: rest)
                }
                buffered = rest
            }
        }

        func finish() -> UInt64 {
            var hash: UInt64
            if total >= 32 {
                hash = EntryChecksum.rotate(v1, 1) &+ EntryChecksum.rotate(v2, 7)
                    &+ EntryChecksum.rotate(v3, 12) &+ EntryChecksum.rotate(v4, 18)
                hash = EntryChecksum.merge(hash, v1)
                hash = EntryChecksum.merge(hash, v2)
                hash = EntryChecksum.merge(hash, v3)
                hash = EntryChecksum.merge(hash, v4)
            } else {
                hash = EntryChecksum.prime5
            }
            hash &+= total
            var tail = buffer
            let remaining = buffered
            withUnsafeBytes(of: &tail) { bytes in
                var offset = 0
                while remaining - offset >= 8 {
                    let lane = UInt64(littleEndian: bytes.loadUnaligned(fromByteOffset: offset, as: UInt64.self))
                    hash ^= EntryChecksum.round(0, lane)
                    hash = EntryChecksum.rotate(hash, 27) &* EntryChecksum.prime1 &+ EntryChecksum.prime4
                    offset += 8
                }
                if remaining - offset >= 4 {
                    let word = UInt64(UInt32(littleEndian: bytes.loadUnaligned(fromByteOffset: offset, as: UInt32.self)))
                    hash ^= word &* EntryChecksum.prime1
                    hash = EntryChecksum.rotate(hash, 23) &* EntryChecksum.prime2 &+ EntryChecksum.prime3
                    offset += 4
                }
                while offset < remaining {
                    hash ^= UInt64(bytes[offset]) &* EntryChecksum.prime5
                    hash = EntryChecksum.rotate(hash, 11) &* EntryChecksum.prime1
                    offset += 1
                }
            }
            hash ^= hash >> 33
            hash = hash &* EntryChecksum.prime2
            hash ^= hash >> 29
            hash = hash &* EntryChecksum.prime3
            hash ^= hash >> 32
            return hash
        }
    }
}

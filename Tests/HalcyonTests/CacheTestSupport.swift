import Foundation
@testable import Halcyon

/// A clock tests move by hand, so expiration needs no sleeping.
final class TestClock: Sendable {
    private let current: Locked<Date>

    init(_ start: Date = Date(timeIntervalSince1970: 1_700_000_000)) {
        current = Locked(start)
    }

    var now: Date { current.withLock { $0 } }

    func advance(by seconds: TimeInterval) {
        current.withLock { $0 = $0.addingTimeInterval(seconds) }
    }

    var cacheClock: CacheClock { CacheClock { [self] in now } }
}

/// A fresh directory under the system temp directory, removed by `remove()`.
struct TemporaryDirectory {
    let url: URL

    init() {
        url = FileManager.default.temporaryDirectory
            .appendingPathComponent("halcyon-cache-tests-\(UUID().uuidString)", isDirectory: true)
        try? FileManager.default.createDirectory(at: url, withIntermediateDirectories: true)
    }

    var path: String { url.path }

    func remove() {
        try? FileManager.default.removeItem(at: url)
    }
}

/// A test image of `width`×`height` whose pixels depend on `seed`.
func makeTestImage(width: Int = 16, height: Int = 12, seed: UInt8 = 0) throws -> Image {
    var pixels: [UInt8] = []
    pixels.reserveCapacity(width * height * 4)
    for y in 0..<height {
        for x in 0..<width {
            pixels.append(UInt8(truncatingIfNeeded: x * 13 &+ Int(seed)))
            pixels.append(UInt8(truncatingIfNeeded: y * 7 &+ Int(seed) * 3))
            pixels.append(UInt8(truncatingIfNeeded: (x + y) * 5))
            pixels.append(255)
        }
    }
    return try Image(rgbaPixels: pixels, width: width, height: height)
}

/// The payload `halcyon-cache-stress` writes; must match Sources/HalcyonCacheStress/main.swift.
func stressPayload(key: Int, writer: Int, round: Int) -> Data {
    let size = 1_024 + (key * 7_919) % 60_000
    var bytes = [UInt8](repeating: 0, count: size)
    for (index, value) in [UInt64(key), UInt64(writer), UInt64(round)].enumerated() {
        withUnsafeBytes(of: value.littleEndian) { raw in
            for offset in 0..<8 { bytes[index * 8 + offset] = raw[offset] }
        }
    }
    var state = UInt64(key &* 31 &+ writer &* 17 &+ round) &* 0x9E37_79B9_7F4A_7C15 | 1
    for index in 24..<size {
        state = state &* 6_364_136_223_846_793_005 &+ 1_442_695_040_888_963_407
        bytes[index] = UInt8(truncatingIfNeeded: state >> 56)
    }
    return Data(bytes)
}

/// Whether `data` is a complete, untorn stress payload for `key`.
func isValidStressPayload(_ data: Data, key: Int) -> Bool {
    guard data.count >= 24 else { return false }
    let fields = data.withUnsafeBytes { raw in
        (0..<3).map { Int(UInt64(littleEndian: raw.loadUnaligned(fromByteOffset: $0 * 8, as: UInt64.self))) }
    }
    guard fields[0] == key else { return false }
    return data == stressPayload(key: key, writer: fields[1], round: fields[2])
}

/// The `halcyon-cache-stress` executable built next to the test bundle.
func stressExecutableURL() -> URL? {
    builtExecutableURL(named: "halcyon-cache-stress")
}

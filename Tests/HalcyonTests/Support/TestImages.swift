import Foundation
@testable import Halcyon

/// Images made in the test, so every expectation is computed from known pixels.
enum TestImages {
    /// RGBA pixels of a gradient: red rises left to right, green top to bottom, blue fixed.
    static func gradientPixels(width: Int, height: Int, blue: UInt8 = 100, alpha: UInt8 = 255) -> [UInt8] {
        var pixels = [UInt8](repeating: 0, count: width * height * 4)
        for y in 0..<height {
            for x in 0..<width {
                let index = (y * width + x) * 4
                pixels[index] = UInt8(x * 255 / max(1, width - 1))
                pixels[index + 1] = UInt8(y * 255 / max(1, height - 1))
                pixels[index + 2] = blue
                pixels[index + 3] = alpha
            }
        }
        return pixels
    }

    /// A still gradient image.
    static func gradient(width: Int = 64, height: Int = 48, alpha: UInt8 = 255) throws -> Image {
        try Image(rgbaPixels: gradientPixels(width: width, height: height, alpha: alpha), width: width, height: height)
    }

    /// A uniform still image.
    static func solid(_ color: RGBA8, width: Int = 16, height: Int = 16) throws -> Image {
        let pixel = [color.red, color.green, color.blue, color.alpha]
        return try Image(rgbaPixels: Array([[UInt8]](repeating: pixel, count: width * height).joined()), width: width, height: height)
    }

    /// An animation whose frame `i` is filled with grey level `i * 40`, with distinct delays.
    static func animation(frames: Int = 4, width: Int = 20, height: Int = 10) throws -> Image {
        let frameData = (0..<frames).map { index -> [UInt8] in
            let level = UInt8(min(255, index * 40))
            return Array([[UInt8]](repeating: [level, 255 - level, 30, 255], count: width * height).joined())
        }
        let delays = (0..<frames).map { Double($0 + 1) * 0.05 }
        return try Image(animationFrames: frameData, width: width, height: height, frameDelays: delays, loopCount: 3)
    }

    /// Encoded bytes of a gradient in `encoding`.
    static func encodedGradient(_ encoding: ImageEncodingFormat, width: Int = 64, height: Int = 48) throws -> Data {
        try gradient(width: width, height: height).encoded(as: encoding)
    }

    /// A PNG whose header claims `width` × `height`, with a valid header checksum,
    /// made from a real 1×1 PNG: a decompression bomb that must be refused from its header.
    static func pngClaimingSize(width: UInt32, height: UInt32) throws -> Data {
        var bytes = [UInt8](try solid(RGBA8(red: 1, green: 2, blue: 3), width: 1, height: 1).encoded(as: .png()))
        // IHDR data starts at 16: width (4 bytes), height (4 bytes).
        for (offset, value) in [(16, width), (20, height)] {
            bytes[offset] = UInt8(value >> 24 & 0xFF)
            bytes[offset + 1] = UInt8(value >> 16 & 0xFF)
            bytes[offset + 2] = UInt8(value >> 8 & 0xFF)
            bytes[offset + 3] = UInt8(value & 0xFF)
        }
        let crc = crc32(Array(bytes[12..<29]))
        bytes[29] = UInt8(crc >> 24 & 0xFF)
        bytes[30] = UInt8(crc >> 16 & 0xFF)
        bytes[31] = UInt8(crc >> 8 & 0xFF)
        bytes[32] = UInt8(crc & 0xFF)
        return Data(bytes)
    }

    /// The CRC-32 PNG chunks carry.
    static func crc32(_ bytes: [UInt8]) -> UInt32 {
        var crc: UInt32 = 0xFFFF_FFFF
        for byte in bytes {
            crc ^= UInt32(byte)
            for _ in 0..<8 {
                crc = crc & 1 == 1 ? (crc >> 1) ^ 0xEDB8_8320 : crc >> 1
            }
        }
        return crc ^ 0xFFFF_FFFF
    }
}

/// The processor error reason inside `error`, for pattern checks.
func processorReason(_ error: any Error) -> HalcyonError.ProcessorErrorReason? {
    if case .processorError(let reason) = error as? HalcyonError { return reason }
    return nil
}

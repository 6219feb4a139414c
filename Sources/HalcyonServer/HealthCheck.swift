import Foundation
import Halcyon

/// Really exercises libvips: makes a tiny image, resizes it and encodes it as PNG.
public struct HealthCheck: Sendable {
    /// Makes the check.
    public init() {}

    /// Whether libvips made, processed and encoded an image; runs on the caller's thread.
    public func check() -> Bool {
        let pixels = [UInt8](repeating: 200, count: 8 * 8 * 4)
        guard let image = try? Image(rgbaPixels: pixels, width: 8, height: 8),
              let small = try? ResizingImageProcessor(referenceSize: CGSize(width: 4, height: 4)).process(item: .image(image), options: HalcyonParsedOptionsInfo(nil)),
              let data = try? ImageEncoder.encode(small, as: .png()) else { return false }
        return ImageFormat(sniffing: data) == .png && small.width == 4
    }
}

import Foundation

/// The `.hc` namespace: Halcyon's helpers on an existing type, as Kingfisher's `.kf`.
public struct HalcyonWrapper<Base> {
    /// The wrapped value.
    public let base: Base

    /// Wraps `base`.
    public init(_ base: Base) {
        self.base = base
    }
}

extension HalcyonWrapper: Sendable where Base: Sendable {}

/// A class type that gets the `.hc` namespace.
public protocol HalcyonCompatible: AnyObject {}

/// A value type that gets the `.hc` namespace.
public protocol HalcyonCompatibleValue {}

extension HalcyonCompatible {
    /// Halcyon's helpers for this object.
    public var hc: HalcyonWrapper<Self> { HalcyonWrapper(self) }
}

extension HalcyonCompatibleValue {
    /// Halcyon's helpers for this value.
    public var hc: HalcyonWrapper<Self> { HalcyonWrapper(self) }
}

extension Image: HalcyonCompatible {}
extension Data: HalcyonCompatibleValue {}

extension HalcyonWrapper where Base == Data {
    /// The image format of the bytes, from their magic bytes.
    public var imageFormat: ImageFormat { ImageFormat(sniffing: base) }
}

extension HalcyonWrapper where Base: Image {
    /// Encodes the image in `format`; `compressionQuality` (0...1) for the lossy ones, PNG for formats Halcyon cannot write.
    public func data(format: ImageFormat, compressionQuality: Double = 1) throws(HalcyonError) -> Data {
        try base.encoded(as: ImageEncodingFormat(format, compressionQuality: compressionQuality) ?? .png())
    }

    /// The image with another scale.
    public func scaled(to scale: CGFloat) -> Image { base.withScale(scale) }
}

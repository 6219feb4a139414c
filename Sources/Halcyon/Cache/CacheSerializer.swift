import Foundation

/// Turns images into bytes for the disk cache, and bytes back into images.
public protocol CacheSerializer: Sendable {
    /// The bytes to store for `image`; `original` is the data it was decoded from, if known.
    func data(with image: Image, original: Data?) throws(HalcyonError) -> Data
    /// Decodes stored bytes, honouring the decoding options in `options`.
    func image(with data: Data, options: HalcyonParsedOptionsInfo) throws(HalcyonError) -> Image
    /// Whether this serializer stores the original data when it has it.
    ///
    /// When true, ``ImageCache`` keeps the source's bytes under a processed key
    /// too and runs the processor again on a disk hit there (Kingfisher's rule).
    var originalDataUsed: Bool { get }
    /// Tells serializers apart in the retrieve pipeline's keys: equal for two
    /// serializers that store and read the same bytes. The default describes a
    /// value type with all its stored settings (reflection, a few microseconds)
    /// and a class by its instance; override it with a cheap string.
    var pipelineIdentity: String { get }
}

extension CacheSerializer {
    public var originalDataUsed: Bool { false }

    public func image(with data: Data, options: HalcyonParsedOptionsInfo) throws(HalcyonError) -> Image {
        try ImageDecoder.decode(data, options: options.decodingOptions)
    }
}

import Foundation

/// What a processor works on: encoded bytes, or an image already decoded.
public enum ImageProcessItem: Sendable {
    case image(Image)
    case data(Data)
}

/// A step that turns an image (or its bytes) into a new image.
///
/// `identifier` must encode every parameter: the cache stores processed images
/// under `key@identifier`, so two processors that give different pixels must
/// never share one. Processors run on the caller's thread and throw
/// `HalcyonError.processorError`.
public protocol ImageProcessor: Sendable {
    /// Names this processor and all its parameters; `""` only for the default one.
    var identifier: String { get }
    /// Processes `item` and returns the new image.
    func process(item: ImageProcessItem, options: HalcyonParsedOptionsInfo) throws(HalcyonError) -> Image
}

extension ImageProcessor {
    /// A processor that runs this one, then `another`; identifier `"self|>another"`.
    public func append(another: any ImageProcessor) -> any ImageProcessor {
        let first: any ImageProcessor = self
        return GeneralProcessor(identifier: "\(identifier)|>\(another.identifier)") { item, options throws(HalcyonError) in
            let image = try first.process(item: item, options: options)
            return try another.process(item: .image(image), options: options)
        }
    }

    /// The image `item` holds, decoding bytes with the default processor.
    func decodedImage(_ item: ImageProcessItem, options: HalcyonParsedOptionsInfo) throws(HalcyonError) -> Image {
        switch item {
        case .image(let image): return image
        case .data: return try DefaultImageProcessor.default.process(item: item, options: options)
        }
    }

    /// Decodes `item` if needed, then transforms every frame alike.
    func processFrames(
        _ item: ImageProcessItem,
        options: HalcyonParsedOptionsInfo,
        _ transform: (VipsImageRef, Image) throws(HalcyonError) -> VipsImageRef
    ) throws(HalcyonError) -> Image {
        let image = try decodedImage(item, options: options)
        return try image.mapFrames(identifier) { (frame) throws(HalcyonError) in try transform(frame, image) }
    }
}

/// Chains two processors: `a |> b` runs `a`, then `b`.
public func |> (left: any ImageProcessor, right: any ImageProcessor) -> any ImageProcessor {
    left.append(another: right)
}

infix operator |>: AdditionPrecedence

/// A processor made from an identifier and a closure.
public struct GeneralProcessor: ImageProcessor {
    public let identifier: String
    private let body: @Sendable (ImageProcessItem, HalcyonParsedOptionsInfo) throws(HalcyonError) -> Image

    /// Makes a processor; `identifier` must encode everything `body` depends on.
    public init(
        identifier: String,
        _ body: @escaping @Sendable (ImageProcessItem, HalcyonParsedOptionsInfo) throws(HalcyonError) -> Image
    ) {
        self.identifier = identifier
        self.body = body
    }

    public func process(item: ImageProcessItem, options: HalcyonParsedOptionsInfo) throws(HalcyonError) -> Image {
        try body(item, options)
    }
}

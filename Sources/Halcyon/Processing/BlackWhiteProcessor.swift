import Foundation

/// Turns an image black and white: no saturation and 0.7 EV of exposure, as
/// Kingfisher's `BlackWhiteProcessor` does with Core Image.
public struct BlackWhiteProcessor: ImageProcessor {
    public let identifier = "\(ProcessorIdentifier.prefix)blackWhite"

    public init() {}

    public func process(item: ImageProcessItem, options: HalcyonParsedOptionsInfo) throws(HalcyonError) -> Image {
        try ColorControlsProcessor(brightness: 0, contrast: 1, saturation: 0, inputEV: 0.7, identifier: identifier)
            .process(item: item, options: options)
    }
}

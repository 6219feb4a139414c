import Foundation

/// Removes metadata before encoding (imgproxy's `strip_metadata`, `keep_copyright`, `strip_color_profile`).
///
/// Drops EXIF, XMP, IPTC and comments. With `keepCopyright` the EXIF
/// copyright and artist survive (written back as a minimal EXIF block);
/// with `keepColorProfile` the ICC profile does. Pixels are unchanged: the
/// decoder has already converted them to sRGB, so dropping the profile does
/// not change how they look.
public struct MetadataStrippingProcessor: ImageProcessor {
    /// Keep EXIF copyright and artist.
    public let keepCopyright: Bool
    /// Keep the ICC profile.
    public let keepColorProfile: Bool
    /// `halcyon.strip(copyright,profile)` with 1 or 0 for each.
    public let identifier: String

    /// Strips as described; both keep-flags default to imgproxy's defaults (copyright kept, profile dropped).
    public init(keepCopyright: Bool = true, keepColorProfile: Bool = false) {
        self.keepCopyright = keepCopyright
        self.keepColorProfile = keepColorProfile
        identifier = "\(ProcessorIdentifier.prefix)strip(\(keepCopyright ? 1 : 0),\(keepColorProfile ? 1 : 0))"
    }

    /// The image without the metadata.
    public func process(item: ImageProcessItem, options: HalcyonParsedOptionsInfo) throws(HalcyonError) -> Image {
        try decodedImage(item, options: options).strippingMetadata(keepCopyright: keepCopyright, keepColorProfile: keepColorProfile)
    }
}

extension Image {
    /// This image without EXIF, XMP, IPTC and comments (see ``MetadataStrippingProcessor``); the pixels are shared.
    public func strippingMetadata(keepCopyright: Bool = true, keepColorProfile: Bool = false) throws(HalcyonError) -> Image {
        let stripped = try vips.strippedMetadata(keepCopyright: keepCopyright, keepColorProfile: keepColorProfile)
        return Image(vips: stripped, frameHeight: height, frameCount: frameCount, scale: scale,
                     originalFormat: originalFormat, frameDelays: frameDelays, loopCount: loopCount)
    }
}

import Foundation
import Halcyon

/// libFuzzer entry point: decodes arbitrary bytes, processes and re-encodes them.
///
/// Any input must either decode or throw a `HalcyonError`; a crash, a
/// sanitizer report or a non-Halcyon error is a bug. Limits are small so an
/// input claiming a huge image is refused from its header, as in production.
@_cdecl("LLVMFuzzerTestOneInput")
public func fuzz(_ start: UnsafeRawPointer, _ count: Int) -> CInt {
    let data = Data(bytes: start, count: count)
    let small = ImageDecodingOptions(preloadAllAnimationData: true, maxPixelCount: 512 * 512, maxFrameCount: 16)
    let chain: any ImageProcessor = DownsamplingImageProcessor(size: CGSize(width: 48, height: 48))
        |> RoundCornerImageProcessor(cornerRadius: 6)
        |> BlurImageProcessor(blurRadius: 1.5)
    var options = HalcyonParsedOptionsInfo(nil)
    options.maxPixelCount = small.maxPixelCount
    do {
        let image = try ImageDecoder.decode(data, options: small)
        _ = try image.rgbaPixels(frame: image.frameCount - 1)
        let processed = try chain.process(item: .image(image), options: options)
        _ = try processed.encoded(as: .png())
    } catch {
        // Typed throws: every error here is a HalcyonError, which is fine.
    }
    // Shrink-on-load is a different libvips path (vips_thumbnail); try it too.
    do {
        var thumbnailOptions = small
        thumbnailOptions.downsampleSize = CGSize(width: 32, height: 32)
        let thumbnail = try ImageDecoder.decode(data, options: thumbnailOptions)
        _ = try thumbnail.encoded(as: .png())
    } catch {}
    // The server's path: libjpeg's own shrink, no vips_thumbnail.
    do {
        var loaderOptions = small
        loaderOptions.downsampleSize = CGSize(width: 24, height: 24)
        loaderOptions.downsamplingMode = .loaderOnly
        let shrunk = try ImageDecoder.decode(data, options: loaderOptions)
        _ = try shrunk.encoded(as: .png())
    } catch {}
    return 0
}

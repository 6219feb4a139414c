import Foundation
import Halcyon
import NIOCore
import Tracing

// MARK: - Output: the encode entry, frame bounds, the source as it is

/// What the encode of one request needs: the asked or negotiated format and the options' output settings.
struct OutputRequest: Sendable {
    /// `f:` or the path's extension.
    var explicit: ImageFormat?
    /// From `Accept`, when nothing is explicit.
    var negotiated: ImageFormat?
    /// The request's options.
    var options: ProcessingOptions
}

extension ImageService {
    /// The encoded result: the request's output steps (metadata, encode; see `RenderStep`) with the server's
    /// defaults for what the options leave unset.
    func encode(_ image: Image, output: OutputRequest) async throws -> (body: Data, format: ImageFormat) {
        let options = output.options.normalised(
            stripMetadata: configuration.stripMetadata, keepCopyright: configuration.keepCopyright,
            stripColorProfile: configuration.stripColorProfile)
        return try await finish(image, steps: options.renderSteps().outputSteps, output: output)
    }

    /// `encoding`, unless one frame of `image` is over what its encoder may be given
    /// (``ImageEncoder/uncancellableFrameLimit(for:)``: GIF and WebP compress a whole frame without looking at
    /// cancellation): then 422 `result_too_large_for_format` when the format was asked for (extension or `f:`), else
    /// PNG for an image with alpha and JPEG for one without, whose encoders stop when the request does.
    func boundedEncoding(_ encoding: ImageEncodingFormat, of image: Image, explicit: Bool) throws -> ImageEncodingFormat {
        guard let limit = ImageEncoder.uncancellableFrameLimit(for: encoding) else { return encoding }
        let (pixels, overflow) = image.width.multipliedReportingOverflow(by: image.height)
        guard overflow || pixels > limit else { return encoding }
        guard !explicit else {
            let megapixels = (Double(limit) / 1e6).formatted(.number.precision(.fractionLength(0...1)))
            throw ServerError(
                status: 422, code: "result_too_large_for_format",
                message: "\(encoding.format.rawValue) output is limited to \(megapixels) megapixels a frame "
                    + "(its encoder cannot be stopped once it starts a frame); this result has \(image.width)x\(image.height)")
        }
        return encodingPolicy.encoding(for: image, as: image.hasAlpha ? .png : .jpeg, quality: configuration.defaultQuality)
    }

    /// The quality of a lossy encoding, nil for lossless ones.
    static func lossyQuality(_ encoding: ImageEncodingFormat) -> Int? {
        switch encoding {
        case .jpeg(let quality, _): return quality
        case .webp(let quality, false), .avif(let quality, false): return quality
        default: return nil
        }
    }

    /// One encode on the bounded encode queue, or in the calling task's render slot when it holds one; stops when the
    /// request's task is cancelled.
    func encodeOnQueue(_ image: Image, as encoding: ImageEncodingFormat) async throws -> Data {
        do {
            return try await RenderCancellation.perform(on: encodeQueue) { () throws(HalcyonError) -> Data in
                try ImageEncoder.encode(image, as: encoding)
            }
        } catch {
            throw ServerError.from(error)
        }
    }

    /// The source's bytes as they are. The download keeps every limit (SSRF guard, size, timeouts) and is the
    /// `halcyon.fetch` span, the current context while it runs, so the HTTP client's span is its child and the
    /// origin gets the trace context.
    func sourceData(_ source: Source) async throws -> Data {
        do {
            switch source {
            case .network(let resource):
                let span = startSpan("halcyon.fetch", context: ServiceContext.current ?? .topLevel, ofKind: .internal)
                defer { span.end() }
                span.attributes["server.address"] = resource.downloadURL.host
                do {
                    let data = try await ServiceContext.withValue(span.context) {
                        try await manager.downloader.downloadData(with: resource.downloadURL).data
                    }
                    span.attributes["http.response.body.size"] = data.count
                    return data
                } catch {
                    span.recordError(error)
                    throw error
                }
            case .provider(let provider):
                return try await provider.data()
            }
        } catch let error as HalcyonError {
            throw ServerError.from(error)
        }
    }

    /// The answer with the source's bytes as they are, for `raw`, and for `skp` when the source's format is listed
    /// and is the output format asked for (or none is asked); nil when neither applies. With `raw` or `skp`, the
    /// bytes must sniff as an image.
    func passThrough(_ data: Data, output: OutputRequest) throws(ServerError) -> ResponseCache.Entry? {
        let options = output.options
        guard options.raw || !options.skipProcessing.isEmpty else { return nil }
        let format = ImageFormat(sniffing: data)
        guard format != .unknown else {
            throw ServerError(status: 422, code: "unsupported_format", message: "the source is not an image in a known format")
        }
        let asked = output.explicit ?? output.negotiated
        guard options.raw || (options.skipProcessing.contains(format) && (asked == nil || asked == format)) else { return nil }
        return ResponseCache.Entry(body: data, contentType: format.mimeType, etag: ImageService.etag(data))
    }
}

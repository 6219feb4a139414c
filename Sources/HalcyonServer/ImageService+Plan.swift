import Foundation
import Halcyon
import Hummingbird

// MARK: - Reading a request into its plan

extension ImageService {
    /// The plan of an image request, read once: `path` (parsed and signature-checked by the image route;
    /// parsed here from the request's path when absent), the options with presets, the source under the source policy, and the output
    /// format from the extension, `f:` or `Accept`. Throws a 4xx naming the problem.
    func plan(for request: Request, path: ImageRequestPath?) throws(ServerError) -> ImageRequestPlan {
        let parsed: ImageRequestPath
        if let path { parsed = path } else { parsed = try Self.parsePath(request.uri.path) }
        var options: ProcessingOptions
        do {
            options = try ProcessingOptions.parse(parsed.options, maxDimension: configuration.maxResultDimension, presets: presets)
        } catch {
            throw ServerError(status: 400, code: "invalid_option", message: "option \"\(error.option)\": \(error.message)")
        }
        if options.watermark != nil && watermark == nil {
            throw ServerError(status: 400, code: "invalid_option", message: "option \"wm\": this server has no watermark image (--watermark-path)")
        }
        if let expires = options.expires, ResponseCache.isPast(expires, now: Date()) {
            throw ServerError(status: 404, code: "expired", message: "the URL expired at \(expires)")
        }
        let source = try resolve(parsed.source)
        // Output format: extension or f:, else Accept, else the source's.
        let explicit = parsed.outputExtension ?? options.format
        options.format = nil
        options = options.normalised(
            stripMetadata: configuration.stripMetadata, keepCopyright: configuration.keepCopyright,
            stripColorProfile: configuration.stripColorProfile)
        return ImageRequestPlan(
            source: source, options: options, explicitFormat: explicit,
            negotiatedFormat: explicit == nil ? negotiatedFormats.format(accepting: request.headers[.accept]) : nil,
            rendering: rendering(drawsWatermark: options.watermark != nil))
    }

    /// The settings of this server that change an answer; the watermark's name only when the options draw it.
    func rendering(drawsWatermark: Bool) -> ImageRequestPlan.Rendering {
        let limits = decodingLimits
        return ImageRequestPlan.Rendering(
            defaultQuality: configuration.defaultQuality, maxResultSide: configuration.maxResultDimension,
            maxFrameCount: limits.maxFrameCount, onlyFirstFrame: limits.onlyFirstFrame, strictness: limits.strictness,
            watermark: drawsWatermark ? watermark?.name : nil)
    }

    /// Refuses a request with a body (413): image requests are GET and HEAD without one.
    static func refuseBody(_ headers: HTTPFields) throws(ServerError) {
        if let length = headers[.contentLength], length != "0" {
            throw ServerError(status: 413, code: "request_body_not_allowed", message: "requests must not have a body")
        }
        if headers[.transferEncoding] != nil {
            throw ServerError(status: 413, code: "request_body_not_allowed", message: "requests must not have a body")
        }
    }
}

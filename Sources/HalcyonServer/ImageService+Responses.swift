import Foundation
import Halcyon
import Hummingbird

extension ImageService {
    // MARK: - Responses

    /// The answer from the response cache for an image path as sent (below the mount prefix) and the request's
    /// headers, or nil; counts the hit.
    ///
    /// Runs before the path is parsed and its signature checked: an entry is only ever stored under a path that
    /// passed both, and the same bytes verify the same way. A request with a body is not answered here (the image
    /// handler refuses it).
    func cachedAnswer(path: String, headers: HTTPFields) -> CachedAnswer? {
        guard headers[.contentLength] == nil, headers[.transferEncoding] == nil,
              let entry = responses.value(for: responseCacheKey(path: path, accept: headers[.accept])) else { return nil }
        // An expired URL's entry is not found (the cache drops it); the image handler refuses the URL.
        metrics.cache("response")
        return CachedAnswer(entry, ifNoneMatch: headers[.ifNoneMatch], ifModifiedSince: headers[.ifModifiedSince])
    }

    /// The response cache's key of a path and an `Accept` header (see ``ResponseCache/Key``).
    func responseCacheKey(path: String, accept: String?) -> ResponseCache.Key {
        ResponseCache.Key(path: path, negotiatedFormat: negotiatedFormats.format(accepting: accept))
    }

    /// Builds the entry's headers once, keeps it in the response cache and answers with it.
    func remember(_ entry: ResponseCache.Entry, rawKey: ResponseCache.Key, request: Request, plan: ImageRequestPlan) -> Response {
        let options = plan.options
        var entry = entry
        entry.expires = plan.expires
        var headers = HTTPFields()
        if options.filename != nil || options.attachment {
            headers[.contentDisposition] = Self.contentDisposition(options, contentType: entry.contentType)
        }
        headers[.eTag] = entry.etag
        headers[.lastModified] = entry.lastModified
        headers[.cacheControl] = configuration.successCacheControl
        headers[.contentSecurityPolicy] = "default-src 'none'; sandbox"
        headers[.xContentTypeOptions] = "nosniff"
        if plan.variesWithAccept { headers[.vary] = "Accept" }
        entry.headers = headers
        headers[.contentType] = entry.contentType
        headers[.contentLength] = String(entry.buffer.readableBytes)
        entry.fullHeaders = headers
        responses.store(entry, for: rawKey)
        return CachedAnswer(
            entry, ifNoneMatch: request.headers[.ifNoneMatch], ifModifiedSince: request.headers[.ifModifiedSince]
        ).response
    }
}

import Hummingbird
import NIOCore

/// An answer made from a response cache entry: a 304 when `If-None-Match` matches its ETag, else a 200 sharing the
/// entry's buffer (no copy). Its headers were built once, when the entry was stored.
struct CachedAnswer: Sendable {
    /// 200 or 304.
    let status: HTTPResponse.Status
    /// The entry's headers (with content type and length for a 200).
    let headers: HTTPFields
    /// The body of a 200; nil for a 304.
    let body: ByteBuffer?

    /// The answer to a request with `ifNoneMatch` (its `If-None-Match` header, if any).
    init(_ entry: ResponseCache.Entry, ifNoneMatch: String?) {
        if let ifNoneMatch, ImageService.matches(ifNoneMatch, etag: entry.etag) {
            (status, headers, body) = (.notModified, entry.headers, nil)
        } else {
            (status, headers, body) = (.ok, entry.fullHeaders, entry.buffer)
        }
    }

    /// The answer as a Hummingbird response.
    var response: Response {
        guard let body else { return Response(status: status, headers: headers) }
        return Response(status: status, headers: headers, body: ResponseBody(byteBuffer: body))
    }
}

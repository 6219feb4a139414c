import Hummingbird
import NIOCore

/// An answer made from a response cache entry: a 304 when `If-None-Match` matches its ETag, or, without
/// `If-None-Match`, when `If-Modified-Since` is a valid HTTP date no earlier than its `Last-Modified` (RFC 9110,
/// section 13.2.2); else a 200 sharing the entry's buffer (no copy). Its headers were built once, when the entry
/// was stored.
struct CachedAnswer: Sendable {
    /// 200 or 304.
    let status: HTTPResponse.Status
    /// The entry's headers (with content type and length for a 200).
    let headers: HTTPFields
    /// The body of a 200; nil for a 304.
    let body: ByteBuffer?

    /// The answer to a `GET` or `HEAD` request with `ifNoneMatch` and `ifModifiedSince` (its `If-None-Match` and
    /// `If-Modified-Since` headers, if any).
    init(_ entry: ResponseCache.Entry, ifNoneMatch: String?, ifModifiedSince: String?) {
        let unchanged = if let ifNoneMatch {
            ImageService.matches(ifNoneMatch, etag: entry.etag)
        } else if let ifModifiedSince, let since = HTTPDate.parse(ifModifiedSince) {
            entry.lastModifiedSeconds <= since
        } else {
            false
        }
        if unchanged {
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

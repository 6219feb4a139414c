import NIOCore
import NIOHTTP1

/// Checks a successful response's `Content-Encoding` before AsyncHTTPClient's decompressor reads it, so a body
/// arrives decoded or not at all.
///
/// The decompressor decodes only a header that is exactly `gzip` or `deflate` and passes anything else through
/// as if it were the image: `x-gzip` (which RFC 9110 has recipients read as `gzip`), a list such as
/// `identity, gzip`, a stack such as `gzip, gzip`, or a coding that was never asked for (`br`, `zstd`). This
/// handler sits next to ``ResponseStatusGuard`` and, for a 2xx head: drops `identity` from the list; rewrites a
/// single `x-gzip` as `gzip` (and a list that leaves one `gzip` or `deflate` as that one coding); and refuses any
/// other coding, or more than one, with ``UnsupportedContentEncoding``, closing the connection (HTTP/1) or the
/// stream (HTTP/2) and dropping the rest of its input. Other statuses' bodies are only drained or dropped, so
/// their `Content-Encoding` is removed: an empty or broken body under a coding must not fail a redirect.
final class ContentCodingGuard: ChannelInboundHandler {
    typealias InboundIn = HTTPClientResponsePart
    typealias InboundOut = HTTPClientResponsePart

    private var refused = false

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        guard !refused else { return }
        guard case .head(var head) = unwrapInboundIn(data), head.headers.contains(name: "content-encoding") else {
            context.fireChannelRead(data)
            return
        }
        // Other statuses' bodies are drained or dropped, never decoded: an empty or broken body under a coding
        // must not fail a redirect.
        guard (200..<300).contains(head.status.code) else {
            head.headers.remove(name: "content-encoding")
            context.fireChannelRead(wrapInboundOut(.head(head)))
            return
        }
        let coding = Self.coding(head.headers[canonicalForm: "content-encoding"])
        switch coding {
        case .identity, .decoded:
            head.headers.remove(name: "content-encoding")
            if case .decoded(let name) = coding { head.headers.add(name: "content-encoding", value: name) }
            context.fireChannelRead(wrapInboundOut(.head(head)))
        case .unsupported:
            refused = true
            let named = head.headers[canonicalForm: "content-encoding"].joined(separator: ", ")
            context.fireErrorCaught(UnsupportedContentEncoding(encoding: String(named.prefix(100))))
            context.close(promise: nil)
        }
    }

    /// What a body's list of content codings comes to.
    enum Coding: Equatable {
        /// No coding but `identity`: the body is as sent.
        case identity
        /// One coding the decompressor undoes, by the name it knows: `gzip` or `deflate`.
        case decoded(String)
        /// Another coding, or more than one.
        case unsupported
    }

    /// What `codings` (the header's list) comes to.
    static func coding(_ codings: [Substring]) -> Coding {
        let named = codings.map { $0.lowercased() }.filter { $0 != "identity" && !$0.isEmpty }
        switch named {
        case []: return .identity
        case ["gzip"], ["x-gzip"]: return .decoded("gzip")
        case ["deflate"]: return .decoded("deflate")
        default: return .unsupported
        }
    }
}

/// A response body in a content coding the downloader cannot decode; see ``ContentCodingGuard``.
struct UnsupportedContentEncoding: Error, Sendable {
    /// The `Content-Encoding` the origin sent (at most 100 characters of it).
    let encoding: String
}

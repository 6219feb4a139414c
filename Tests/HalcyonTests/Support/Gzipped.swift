import Foundation
import NIOCore
import NIOEmbedded
import NIOHTTP1
import NIOHTTPCompression

/// Real zlib compression for test origins: `bytes` as NIO's HTTP response compressor sends them to a client that
/// accepts `coding` (`gzip` or `deflate`), on an embedded channel.
enum Gzipped {
    static func encode(_ bytes: Data, coding: String = "gzip") throws -> Data {
        let channel = EmbeddedChannel(handler: HTTPResponseCompressor())
        defer { _ = try? channel.finish() }
        var request = HTTPRequestHead(version: .http1_1, method: .GET, uri: "/")
        request.headers.add(name: "Accept-Encoding", value: coding)
        try channel.writeInbound(HTTPServerRequestPart.head(request))
        try channel.writeInbound(HTTPServerRequestPart.end(nil))
        let head = HTTPResponseHead(version: .http1_1, status: .ok, headers: ["Content-Type": "application/octet-stream"])
        try channel.writeOutbound(HTTPServerResponsePart.head(head))
        try channel.writeOutbound(HTTPServerResponsePart.body(.byteBuffer(ByteBuffer(bytes: bytes))))
        try channel.writeOutbound(HTTPServerResponsePart.end(nil))
        var encoded = Data()
        while let part = try channel.readOutbound(as: HTTPServerResponsePart.self) {
            if case .body(.byteBuffer(let buffer)) = part { encoded.append(contentsOf: buffer.readableBytesView) }
        }
        return encoded
    }
}

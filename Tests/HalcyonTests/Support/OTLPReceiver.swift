import Foundation
import Halcyon
import NIOCore
import NIOHTTP1
import NIOPosix

/// An OTLP/HTTP receiver on 127.0.0.1 for one test: accepts `POST /v1/traces`
/// with JSON bodies (`OTEL_EXPORTER_OTLP_PROTOCOL=http/json`), answers 200
/// `{}`, and keeps every span it was sent.
final class OTLPReceiver: Sendable {
    /// One received span, ids in lowercase hex.
    struct ReceivedSpan: Sendable {
        let name: String
        let traceID: String
        let spanID: String
        let parentSpanID: String
        let attributes: [String: String]
    }

    let port: Int
    private let channel: any Channel
    private let bodies: Locked<[Data]>

    private init(port: Int, channel: any Channel, bodies: Locked<[Data]>) {
        self.port = port
        self.channel = channel
        self.bodies = bodies
    }

    /// `http://127.0.0.1:port/v1/traces`.
    var endpoint: String { "http://127.0.0.1:\(port)/v1/traces" }

    static func start() async throws -> OTLPReceiver {
        let bodies = Locked<[Data]>([])
        let channel = try await ServerBootstrap(group: MultiThreadedEventLoopGroup.singleton)
            .serverChannelOption(.socketOption(.so_reuseaddr), value: 1)
            .childChannelInitializer { channel in
                channel.pipeline.configureHTTPServerPipeline().flatMap {
                    channel.pipeline.addHandler(ReceiverHandler(bodies: bodies))
                }
            }
            .bind(host: "127.0.0.1", port: 0).get()
        guard let port = channel.localAddress?.port else { throw CancellationError() }
        return OTLPReceiver(port: port, channel: channel, bodies: bodies)
    }

    func shutdown() async { try? await channel.close() }

    /// Every span received so far.
    var spans: [ReceivedSpan] {
        bodies.withLock { $0 }.flatMap(Self.spans(in:))
    }

    /// The spans of one OTLP/JSON `ExportTraceServiceRequest`.
    static func spans(in body: Data) -> [ReceivedSpan] {
        guard let root = try? JSONSerialization.jsonObject(with: body) as? [String: Any] else { return [] }
        var found: [ReceivedSpan] = []
        for resource in root["resourceSpans"] as? [[String: Any]] ?? [] {
            for scope in resource["scopeSpans"] as? [[String: Any]] ?? [] {
                for span in scope["spans"] as? [[String: Any]] ?? [] {
                    var attributes: [String: String] = [:]
                    for attribute in span["attributes"] as? [[String: Any]] ?? [] {
                        guard let key = attribute["key"] as? String, let value = attribute["value"] as? [String: Any],
                              let first = value.values.first else { continue }
                        attributes[key] = "\(first)"
                    }
                    found.append(ReceivedSpan(
                        name: span["name"] as? String ?? "", traceID: hex(span["traceId"]), spanID: hex(span["spanId"]),
                        parentSpanID: hex(span["parentSpanId"]), attributes: attributes))
                }
            }
        }
        return found
    }

    /// An id as lowercase hex, whether the exporter wrote hex (OTLP/JSON) or base64 (protobuf's JSON mapping).
    static func hex(_ value: Any?) -> String {
        guard let text = value as? String, !text.isEmpty else { return "" }
        let isHex = text.count % 2 == 0 && text.allSatisfy(\.isHexDigit)
        if isHex { return text.lowercased() }
        guard let bytes = Data(base64Encoded: text) else { return text }
        return bytes.map { String(format: "%02x", $0) }.joined()
    }
}

/// Unchecked: NIO creates one handler per connection and calls it only on that channel's event loop, so `body`
/// is never touched from two threads; the shared list of bodies is behind its own lock.
private final class ReceiverHandler: ChannelInboundHandler, @unchecked Sendable {
    typealias InboundIn = HTTPServerRequestPart
    typealias OutboundOut = HTTPServerResponsePart

    private let bodies: Locked<[Data]>
    private var body = Data()

    init(bodies: Locked<[Data]>) { self.bodies = bodies }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        switch unwrapInboundIn(data) {
        case .head:
            body = Data()
        case .body(let buffer):
            body.append(contentsOf: buffer.readableBytesView)
        case .end:
            let received = body
            bodies.withLock { $0.append(received) }
            var headers = HTTPHeaders()
            headers.add(name: "Content-Type", value: "application/json")
            headers.add(name: "Content-Length", value: "2")
            context.write(wrapOutboundOut(.head(HTTPResponseHead(version: .http1_1, status: .ok, headers: headers))), promise: nil)
            context.write(wrapOutboundOut(.body(.byteBuffer(ByteBuffer(string: "{}")))), promise: nil)
            context.writeAndFlush(wrapOutboundOut(.end(nil)), promise: nil)
        }
    }
}

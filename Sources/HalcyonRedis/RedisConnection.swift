import Halcyon
import NIOCore
import NIOPosix

/// One TCP connection to Redis with pipelining: commands are written as they
/// come and their replies matched first-in, first-out.
///
/// A command that times out closes the connection (its reply order can no
/// longer be trusted) and every command still waiting on it fails with
/// `.connectionFailed`. A cancelled caller gets `.cancelled` at once; its
/// reply, when it comes, is read and dropped, so the order holds.
final class RedisConnection: Sendable {
    let channel: any Channel
    private let waiting = Locked(0)
    /// Set when this side decided to close (a timeout): the pool stops handing it out at once.
    private let closing = Locked(false)

    private init(channel: any Channel) {
        self.channel = channel
    }

    /// Connects, then sends AUTH and SELECT as configured; throws `.connectionFailed`, `.timeout` or `.authenticationFailed`.
    static func connect(_ configuration: RedisConfiguration, group: any EventLoopGroup) async throws(RedisError) -> RedisConnection {
        let parser = RESPParser(maxValueBytes: configuration.maxValueBytes)
        let channel: any Channel
        do {
            channel = try await ClientBootstrap(group: group)
                .connectTimeout(.nanoseconds(Self.nanoseconds(configuration.connectTimeout)))
                .channelOption(.socketOption(.tcp_nodelay), value: 1)
                .channelInitializer { channel in
                    channel.eventLoop.makeCompletedFuture {
                        try channel.pipeline.syncOperations.addHandler(ByteToMessageHandler(RESPDecoder(parser: parser)))
                        try channel.pipeline.syncOperations.addHandler(RedisCommandHandler())
                    }
                }
                .connect(host: configuration.host, port: configuration.port).get()
        } catch {
            throw .connectionFailed("\(configuration.host):\(configuration.port): \(error)")
        }
        let connection = RedisConnection(channel: channel)
        do throws(RedisError) {
            try await connection.handshake(configuration)
        } catch {
            channel.close(promise: nil)
            throw error
        }
        return connection
    }

    private func handshake(_ configuration: RedisConfiguration) async throws(RedisError) {
        if let password = configuration.password {
            let arguments = [Array("AUTH".utf8)] + (configuration.username.map { [Array($0.utf8)] } ?? []) + [Array(password.utf8)]
            switch await send(arguments, timeout: configuration.connectTimeout) {
            case .success(.error(let message)): throw .authenticationFailed(message)
            case .failure(let error): throw error
            case .success: break
            }
        }
        if configuration.database != 0 {
            switch await send([Array("SELECT".utf8), Array(String(configuration.database).utf8)], timeout: configuration.connectTimeout) {
            case .success(.error(let message)):
                throw message.hasPrefix("NOAUTH") ? .authenticationFailed(message) : .server(message)
            case .failure(let error): throw error
            case .success: break
            }
        }
    }

    /// Whether the socket is still open.
    var isActive: Bool { !closing.withLock { $0 } && channel.isActive }

    /// Commands sent and not answered yet.
    var inFlight: Int { waiting.withLock { $0 } }

    /// Sends one command and waits for its reply, at most `timeout`.
    func send(_ arguments: [[UInt8]], timeout: Duration) async -> Result<RESPValue, RedisError> {
        waiting.withLock { $0 += 1 }
        defer { waiting.withLock { $0 -= 1 } }
        var buffer = channel.allocator.buffer(capacity: arguments.reduce(16) { $0 + $1.count + 16 })
        RESPEncoder.encode(arguments, into: &buffer)
        let reply = PendingReply()
        let channel = self.channel
        let closing = self.closing
        let timer = channel.eventLoop.scheduleTask(in: .nanoseconds(Self.nanoseconds(timeout))) {
            // Marked before the caller resumes, so its next command never picks this connection.
            closing.withLock { $0 = true }
            reply.resolve(.failure(.timeout))
            channel.close(promise: nil)
        }
        defer { timer.cancel() }
        let bytes = buffer
        return await withTaskCancellationHandler {
            await reply.wait { reply in
                channel.writeAndFlush(RedisOutbound(bytes: bytes, reply: reply)).whenFailure { error in
                    reply.resolve(.failure(.connectionFailed("write failed: \(error)")))
                }
            }
        } onCancel: {
            reply.resolve(.failure(.cancelled))
        }
    }

    /// Closes the socket; waiting commands fail with `.connectionFailed`.
    func close() {
        closing.withLock { $0 = true }
        channel.close(promise: nil)
    }

    static func nanoseconds(_ duration: Duration) -> Int64 {
        let parts = duration.components
        return parts.seconds * 1_000_000_000 + parts.attoseconds / 1_000_000_000
    }
}

/// The reply one caller waits for: resolved once, by the reply, a timeout, a
/// dropped connection or cancellation, whichever comes first.
final class PendingReply: Sendable {
    private struct State {
        var continuation: CheckedContinuation<Result<RESPValue, RedisError>, Never>?
        var early: Result<RESPValue, RedisError>?
        var resolved = false
    }

    private let state = Locked(State())

    /// Waits for the result; `start` runs once the waiter is in place.
    func wait(_ start: @escaping @Sendable (PendingReply) -> Void) async -> Result<RESPValue, RedisError> {
        await withCheckedContinuation { continuation in
            let early = state.withLock { state -> Result<RESPValue, RedisError>? in
                if let early = state.early { return early }
                state.continuation = continuation
                return nil
            }
            if let early {
                continuation.resume(returning: early)
                return
            }
            start(self)
        }
    }

    /// Resolves with `result`; false when already resolved (the result is dropped).
    @discardableResult
    func resolve(_ result: Result<RESPValue, RedisError>) -> Bool {
        let continuation = state.withLock { state -> CheckedContinuation<Result<RESPValue, RedisError>, Never>?? in
            guard !state.resolved else { return nil }
            state.resolved = true
            guard let continuation = state.continuation else {
                state.early = result
                return .some(nil)
            }
            state.continuation = nil
            return .some(continuation)
        }
        guard let continuation else { return false }
        continuation?.resume(returning: result)
        return true
    }
}

/// A command's bytes with the reply that waits for it.
struct RedisOutbound: Sendable {
    let bytes: ByteBuffer
    let reply: PendingReply
}

/// ``RESPParser`` as a NIO decoder.
struct RESPDecoder: ByteToMessageDecoder {
    typealias InboundOut = RESPValue
    let parser: RESPParser

    mutating func decode(context: ChannelHandlerContext, buffer: inout ByteBuffer) throws -> DecodingState {
        guard let value = try parser.next(from: &buffer) else { return .needMoreData }
        context.fireChannelRead(wrapInboundOut(value))
        return .continue
    }

    mutating func decodeLast(context: ChannelHandlerContext, buffer: inout ByteBuffer, seenEOF: Bool) throws -> DecodingState {
        try decode(context: context, buffer: &buffer)
    }
}

/// Matches replies to commands in order; fails every waiting command when the connection ends.
/// Lives on the channel's event loop only.
final class RedisCommandHandler: ChannelDuplexHandler {
    typealias InboundIn = RESPValue
    typealias OutboundIn = RedisOutbound
    typealias OutboundOut = ByteBuffer

    private var waiting = CircularBuffer<PendingReply>()

    func write(context: ChannelHandlerContext, data: NIOAny, promise: EventLoopPromise<Void>?) {
        let outbound = unwrapOutboundIn(data)
        waiting.append(outbound.reply)
        context.write(wrapOutboundOut(outbound.bytes), promise: promise)
    }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        let value = unwrapInboundIn(data)
        guard let reply = waiting.popFirst() else {
            context.fireErrorCaught(RedisError.protocolViolation("a reply nobody asked for"))
            return
        }
        reply.resolve(.success(value))
    }

    func errorCaught(context: ChannelHandlerContext, error: any Error) {
        failAll((error as? RedisError) ?? .connectionFailed("\(error)"))
        context.close(promise: nil)
    }

    func channelInactive(context: ChannelHandlerContext) {
        failAll(.connectionFailed("the connection closed"))
        context.fireChannelInactive()
    }

    private func failAll(_ error: RedisError) {
        while let reply = waiting.popFirst() { reply.resolve(.failure(error)) }
    }
}

import NIOCore
import NIOHTTP1

/// Drives one HTTP/1 connection's ``ConnectionStateMachine``: feeds it the
/// connection's events, performs its actions (timers, closes, resets,
/// reports to the cap in ``ConnectionLimits``, hang-up signals), and keeps
/// no policy of its own.
///
/// Sits between NIO's HTTP/1 decoder and encoder and the conversion to HTTP
/// types, where a request's version is still known. With no limits (the
/// metrics port) it applies the keep-alive rules only.
final class ConnectionHandler: ChannelDuplexHandler, RemovableChannelHandler {
    typealias InboundIn = HTTPServerRequestPart
    typealias InboundOut = HTTPServerRequestPart
    typealias OutboundIn = HTTPServerResponsePart
    typealias OutboundOut = HTTPServerResponsePart

    /// Sent down a connection's pipeline, from any thread, to end it at once: closed, or reset (SO_LINGER 0, its
    /// unsent output dropped) when `reset`. Its close is not held for answers still to be written.
    struct End: Sendable {
        /// Reset rather than close.
        let reset: Bool
    }

    /// Most bytes of output the kernel holds unsent for a connection.
    static let unsentLimit: SocketOptionValue = 128 * 1024

    private let limits: ConnectionLimits?
    private var machine: ConnectionStateMachine
    /// Counted in by the limits (until it leaves).
    private var counted = false
    private var timer: Scheduled<Void>?

    /// Makes the handler of one connection under `limits` (nil: keep-alive rules only).
    init(limits: ConnectionLimits?) {
        self.limits = limits
        machine = ConnectionStateMachine(timeouts: limits.map { .init(head: $0.headerTimeout, write: $0.writeTimeout) })
    }

    // MARK: - Lifecycle

    func handlerAdded(context: ChannelHandlerContext) {
        guard let limits else { return }
        limits.hangUps.watch(context.channel)
        guard limits.enter(context.channel) else { return context.close(promise: nil) }
        counted = true
        limitUnsentBytes(context)
        perform(machine.started(now: .now()), context)
    }

    func handlerRemoved(context: ChannelHandlerContext) {
        machine.removed()
        timer?.cancel()
        timer = nil
        if counted {
            counted = false
            limits?.leave(context.channel)
        }
    }

    func channelInactive(context: ChannelHandlerContext) {
        perform(machine.clientHungUp(), context)
        context.fireChannelInactive()
    }

    func userInboundEventTriggered(context: ChannelHandlerContext, event: Any) {
        if case ChannelEvent.inputClosed = event { perform(machine.clientHungUp(), context) }
        context.fireUserInboundEventTriggered(event)
    }

    func triggerUserOutboundEvent(context: ChannelHandlerContext, event: Any, promise: EventLoopPromise<Void>?) {
        guard let end = event as? End else { return context.triggerUserOutboundEvent(event, promise: promise) }
        machine.forceEnd()
        end.reset ? Self.reset(context.channel) : context.close(promise: nil)
        promise?.succeed()
    }

    // MARK: - Requests and answers

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        guard case .head(var head) = unwrapInboundIn(data) else { return context.fireChannelRead(data) }
        let request = ConnectionStateMachine.Request(version: head.version, keepAlive: head.isKeepAlive, isHEAD: head.method == .HEAD)
        let (closing, actions) = machine.requestHead(request)
        perform(actions, context)
        // A request that does not keep the connection reaches Hummingbird with `Connection: close`: its loop ends after the answer.
        guard closing else { return context.fireChannelRead(data) }
        head.headers.replaceOrAdd(name: "connection", value: "close")
        context.fireChannelRead(wrapInboundOut(.head(head)))
    }

    func write(context: ChannelHandlerContext, data: NIOAny, promise: EventLoopPromise<Void>?) {
        switch unwrapOutboundIn(data) {
        case .head(var head):
            let rewrite = machine.answerHead(
                status: Int(head.status.code), keepAlive: head.isKeepAlive, hasLength: head.headers.contains(name: "content-length"))
            guard case .rewrite(let version, let connection) = rewrite else { return context.write(data, promise: promise) }
            if let version { head.version = version }
            head.headers.replaceOrAdd(name: "connection", value: connection)
            context.write(wrapOutboundOut(.head(head)), promise: promise)
        case .body:
            context.write(data, promise: promise)
        case .end:
            let closeOutput = machine.answerEnd()
            let written = promise ?? context.eventLoop.makePromise()
            closeOutput ? context.writeAndFlush(data, promise: written) : context.write(data, promise: written)
            let loopBound = NIOLoopBound((handler: self, context: context), eventLoop: context.eventLoop)
            written.futureResult.whenComplete { _ in
                let (handler, context) = loopBound.value
                // Output only: the client still reads the answer; Hummingbird ends the connection when its input ends.
                if closeOutput { context.channel.close(mode: .output, promise: nil) }
                handler.perform(handler.machine.answerEndWritten(now: .now(), output: Probe(context: context)), context)
            }
        }
    }

    // MARK: - Output

    func flush(context: ChannelHandlerContext) {
        context.flush()
        // Usually every answer is written out within the flush; what is left waits for the client.
        perform(machine.flushed(now: .now(), output: Probe(context: context)), context)
    }

    func channelWritabilityChanged(context: ChannelHandlerContext) {
        perform(machine.writabilityChanged(now: .now(), output: Probe(context: context)), context)
        context.fireChannelWritabilityChanged()
    }

    func close(context: ChannelHandlerContext, mode: CloseMode, promise: EventLoopPromise<Void>?) {
        switch machine.closeRequested(all: mode == .all, active: context.channel.isActive) {
        case .closeNow:
            context.close(mode: mode, promise: promise)
        case .hold(let stopReading):
            // The close's promise completes when the channel closes; nothing more is read meanwhile.
            promise.map { context.channel.closeFuture.cascade(to: $0) }
            if stopReading { _ = context.channel.setOption(ChannelOptions.autoRead, value: false) }
        }
    }

    // MARK: - Actions

    private func perform(_ actions: [ConnectionStateMachine.Action], _ context: ChannelHandlerContext) {
        for action in actions {
            switch action {
            case .report(let wait):
                limits?.update(context.channel, wait)
            case .schedule(let due):
                schedule(at: due, context)
            case .close:
                context.close(promise: nil)
            case .resetForWriteTimeout:
                limits?.metrics?.connectionWriteTimedOut()
                Self.reset(context.channel)
            case .signalHangUp:
                limits?.hangUps.hungUp(context.channel)
            }
        }
    }

    /// Replaces the pending timer with one firing at `due`.
    private func schedule(at due: NIODeadline, _ context: ChannelHandlerContext) {
        timer?.cancel()
        let loopBound = NIOLoopBound((handler: self, context: context), eventLoop: context.eventLoop)
        timer = context.eventLoop.scheduleTask(deadline: due) {
            let (handler, context) = loopBound.value
            handler.timer = nil
            handler.perform(handler.machine.timerFired(now: .now(), output: Probe(context: context)), context)
        }
    }

    /// Closes `channel` with SO_LINGER 0: a reset, and its unsent output is dropped; from any thread.
    static func reset(_ channel: any Channel) {
        guard let socket = channel as? any SocketOptionProvider else { return channel.close(promise: nil) }
        socket.setSoLinger(NIOLinger(l_onoff: 1, l_linger: 0)).whenComplete { _ in channel.close(promise: nil) }
    }

    /// Lets the kernel hold at most ``unsentLimit`` bytes not yet sent (`TCP_NOTSENT_LOWAT`, Linux): the rest of an
    /// answer stays in the channel's buffer and leaves it as the client reads, so progress shows in steps of that
    /// size, not of a third of a send buffer that grows to megabytes; and a client that stops reading holds that
    /// much kernel memory, not megabytes.
    private func limitUnsentBytes(_ context: ChannelHandlerContext) {
        #if os(Linux)
        let option = ChannelOptions.tcpOption(NIOBSDSocket.Option(rawValue: 25))
        try? context.channel.syncOptions?.setOption(option, value: Self.unsentLimit)
        #endif
    }
}

/// The output of a connection, read through its handler's context on the event loop.
private struct Probe: ConnectionOutputProbe {
    let context: ChannelHandlerContext

    var isActive: Bool { context.channel.isActive }
    var isWritable: Bool { context.channel.isWritable }
    var bufferedBytes: Int { (try? context.channel.syncOptions?.getOption(ChannelOptions.bufferedWritableBytes)) ?? 0 }

    /// Linux's `tcpi_bytes_acked` (4.1 and later), which grows as the client reads and its window reopens. On the
    /// event loop, the option is read at once.
    var bytesAcknowledged: UInt64 {
        #if os(Linux)
        guard let socket = context.channel as? any SocketOptionProvider else { return 0 }
        // The first 256 bytes of `struct tcp_info`; `tcpi_bytes_acked` is the 64-bit count at byte 120.
        let info: EventLoopFuture<SIMD32<UInt64>> = socket.unsafeGetSocketOption(level: .tcp, name: .tcp_info)
        var acknowledged: UInt64 = 0
        info.assumeIsolated().whenSuccess { acknowledged = $0[15] }
        return acknowledged
        #else
        return 0
        #endif
    }
}

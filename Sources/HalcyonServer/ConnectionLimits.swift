import Halcyon
import NIOCore
import NIOHTTPTypes

/// The connection-level limits of the service, as channel handlers added to
/// every HTTP/1 connection: a cap on open connections (imgproxy's
/// `MAX_CLIENTS`), a deadline for each request's head (against slowloris
/// clients that trickle header bytes), and a watch for clients that hang up
/// (Hummingbird keeps half-closed connections open, so a request learns of a
/// gone client only through ``clientHungUp(_:)``). Idle keep-alive
/// connections are closed by Hummingbird's own idle timeout.
public final class ConnectionLimits: Sendable {
    /// Most connections open at once.
    public let maxConnections: Int
    /// Time a client has to send a whole request head, from the connection's
    /// start or the end of the previous response.
    public let headerTimeout: TimeAmount
    private let open = Locked(0)
    private let hungUp = Locked<Set<ObjectIdentifier>>([])

    /// Makes the limits.
    public init(maxConnections: Int, headerTimeout: TimeAmount) {
        self.maxConnections = max(1, maxConnections)
        self.headerTimeout = headerTimeout
    }

    /// Connections open now.
    public var openConnections: Int { open.withLock { $0 } }

    /// The handlers for one new connection.
    func handlers() -> [any RemovableChannelHandler] {
        [ConnectionCapHandler(limits: self), HeaderTimeoutHandler(timeout: headerTimeout), HangUpHandler(limits: self)]
    }

    /// Whether the client of `channel` has closed its side or the connection is gone.
    public func clientHungUp(_ channel: any Channel) -> Bool {
        !channel.isActive || hungUp.withLock { $0.contains(ObjectIdentifier(channel)) }
    }

    fileprivate func markHungUp(_ channel: any Channel, _ value: Bool) {
        _ = hungUp.withLock { set in value ? set.insert(ObjectIdentifier(channel)).inserted : set.remove(ObjectIdentifier(channel)) != nil }
    }

    /// Counts a connection in; false (not counted) when the cap is reached.
    fileprivate func enter() -> Bool {
        open.withLock { open -> Bool in
            guard open < maxConnections else { return false }
            open += 1
            return true
        }
    }

    fileprivate func leave() {
        open.withLock { $0 -= 1 }
    }
}

/// Closes a connection at once when the cap is reached; counts it out when it closes.
final class ConnectionCapHandler: ChannelInboundHandler, RemovableChannelHandler {
    typealias InboundIn = HTTPRequestPart
    private let limits: ConnectionLimits
    private var counted = false

    init(limits: ConnectionLimits) { self.limits = limits }

    func handlerAdded(context: ChannelHandlerContext) {
        counted = limits.enter()
        if !counted { context.close(promise: nil) }
    }

    func handlerRemoved(context: ChannelHandlerContext) {
        if counted {
            counted = false
            limits.leave()
        }
    }
}

/// Closes the connection when a request head does not arrive in time.
///
/// The clock starts when the connection opens and again when a response
/// ends; it stops when a request head has been decoded. One timer at a time
/// checks the deadline: a response's end moves the deadline and a head clears
/// it, so a busy keep-alive connection schedules a timer once per timeout,
/// not once per request.
final class HeaderTimeoutHandler: ChannelDuplexHandler, RemovableChannelHandler {
    typealias InboundIn = HTTPRequestPart
    typealias InboundOut = HTTPRequestPart
    typealias OutboundIn = HTTPResponsePart
    typealias OutboundOut = HTTPResponsePart

    private let timeout: TimeAmount
    private var timer: Scheduled<Void>?
    /// When the awaited request head is due; nil while none is awaited.
    private var deadline: NIODeadline?

    init(timeout: TimeAmount) { self.timeout = timeout }

    func handlerAdded(context: ChannelHandlerContext) { arm(context) }

    func handlerRemoved(context: ChannelHandlerContext) {
        deadline = nil
        timer?.cancel()
        timer = nil
    }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        if case .head = unwrapInboundIn(data) { deadline = nil }
        context.fireChannelRead(data)
    }

    func write(context: ChannelHandlerContext, data: NIOAny, promise: EventLoopPromise<Void>?) {
        if case .end = unwrapOutboundIn(data) { arm(context) }
        context.write(data, promise: promise)
    }

    /// Awaits a request head from now on; schedules the check unless one is pending (it fires no later than this deadline).
    private func arm(_ context: ChannelHandlerContext) {
        let due = NIODeadline.now() + timeout
        deadline = due
        if timer == nil { schedule(at: due, context) }
    }

    private func schedule(at due: NIODeadline, _ context: ChannelHandlerContext) {
        let loopBound = NIOLoopBound((handler: self, context: context), eventLoop: context.eventLoop)
        timer = context.eventLoop.scheduleTask(deadline: due) {
            loopBound.value.handler.check(loopBound.value.context)
        }
    }

    /// Closes the connection when the awaited head is overdue; checks again at a later deadline.
    private func check(_ context: ChannelHandlerContext) {
        timer = nil
        guard let deadline else { return }
        if deadline <= .now() {
            context.close(promise: nil)
        } else {
            schedule(at: deadline, context)
        }
    }
}

/// Records a client's end of input (it closed or half-closed the connection) for ``ConnectionLimits/clientHungUp(_:)``.
final class HangUpHandler: ChannelInboundHandler, RemovableChannelHandler {
    typealias InboundIn = HTTPRequestPart
    private let limits: ConnectionLimits

    init(limits: ConnectionLimits) { self.limits = limits }

    func userInboundEventTriggered(context: ChannelHandlerContext, event: Any) {
        if case ChannelEvent.inputClosed = event { limits.markHungUp(context.channel, true) }
        context.fireUserInboundEventTriggered(event)
    }

    func handlerRemoved(context: ChannelHandlerContext) {
        limits.markHungUp(context.channel, false)
    }
}

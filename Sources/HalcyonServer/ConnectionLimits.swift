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
///
/// At the cap, as nginx does, a new connection takes the place of the
/// connection that has waited longest for a request head (a new or idle
/// keep-alive connection, or one trickling its head), which is closed; only
/// when every connection is busy with a request is the new one closed. So
/// silent sockets cannot keep real clients out. One lock guards the counts.
public final class ConnectionLimits: Sendable {
    /// Most connections open at once.
    public let maxConnections: Int
    /// Time a client has to send a whole request head, from the connection's
    /// start or the end of the previous response.
    public let headerTimeout: TimeAmount
    private struct State {
        var open = 0
        /// Counted connections waiting for a request head, the longest-waiting oldest.
        var waiting = LRUList<ObjectIdentifier, any Channel>()
        /// Connections closed to make room, whose place went to the connection that displaced them.
        var displaced = Set<ObjectIdentifier>()
    }
    private let state = Locked(State())
    private let hungUp = Locked<Set<ObjectIdentifier>>([])

    /// Makes the limits.
    public init(maxConnections: Int, headerTimeout: TimeAmount) {
        self.maxConnections = max(1, maxConnections)
        self.headerTimeout = headerTimeout
    }

    /// Connections open now.
    public var openConnections: Int { state.withLock { $0.open } }

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

    /// Counts `channel` in, waiting for its first request head; false (not counted) when the cap is reached and
    /// every connection is busy. At the cap, the connection waiting longest for a head is closed and `channel`
    /// takes its place.
    fileprivate func enter(_ channel: any Channel) -> Bool {
        let (entered, displaced) = state.withLock { state -> (Bool, (any Channel)?) in
            var displaced: (any Channel)?
            if state.open < maxConnections {
                state.open += 1
            } else if let oldest = state.waiting.removeOldest() {
                state.displaced.insert(ObjectIdentifier(oldest))
                displaced = oldest
            } else {
                return (false, nil)
            }
            _ = state.waiting.insert(channel, for: ObjectIdentifier(channel), cost: 0)
            return (true, displaced)
        }
        displaced?.close(promise: nil)
        return entered
    }

    /// Records whether counted `channel` waits for a request head (it may then be displaced).
    fileprivate func setWaiting(_ channel: any Channel, _ waiting: Bool) {
        let key = ObjectIdentifier(channel)
        state.withLock { state in
            guard !state.displaced.contains(key) else { return }
            if waiting {
                if state.waiting.slot(for: key) == nil { _ = state.waiting.insert(channel, for: key, cost: 0) }
            } else {
                _ = state.waiting.removeValue(forKey: key)
            }
        }
    }

    /// Counts counted `channel` out, unless it was displaced (its place went on to another connection).
    fileprivate func leave(_ channel: any Channel) {
        let key = ObjectIdentifier(channel)
        state.withLock { state in
            _ = state.waiting.removeValue(forKey: key)
            if state.displaced.remove(key) == nil { state.open -= 1 }
        }
    }
}

/// Counts a connection in, or closes it at once when the cap is reached and no connection can make room; tells
/// the limits while the connection waits for a request head; counts it out when it closes.
final class ConnectionCapHandler: ChannelDuplexHandler, RemovableChannelHandler {
    typealias InboundIn = HTTPRequestPart
    typealias OutboundIn = HTTPResponsePart
    private let limits: ConnectionLimits
    private var counted = false

    init(limits: ConnectionLimits) { self.limits = limits }

    func handlerAdded(context: ChannelHandlerContext) {
        counted = limits.enter(context.channel)
        if !counted { context.close(promise: nil) }
    }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        if counted, case .head = unwrapInboundIn(data) { limits.setWaiting(context.channel, false) }
        context.fireChannelRead(data)
    }

    func write(context: ChannelHandlerContext, data: NIOAny, promise: EventLoopPromise<Void>?) {
        if counted, case .end = unwrapOutboundIn(data) { limits.setWaiting(context.channel, true) }
        context.write(data, promise: promise)
    }

    func handlerRemoved(context: ChannelHandlerContext) {
        if counted {
            counted = false
            limits.leave(context.channel)
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

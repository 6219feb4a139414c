import Halcyon
import NIOCore
import NIOHTTPTypes

/// The connection-level limits of the service, as channel handlers added to
/// every HTTP/1 connection: a cap on open connections (imgproxy's
/// `MAX_CLIENTS`), a deadline for each request's head (against slowloris
/// clients that trickle header bytes, and idle keep-alive connections), and a
/// watch for clients that hang up (Hummingbird keeps half-closed connections
/// open, so a request learns of a gone client only through ``clientHungUp(_:)``).
///
/// At the cap, as nginx does, a new connection takes the place of the
/// connection that has waited longest for a request head (a new or idle
/// keep-alive connection, or one trickling its head), which is closed, when
/// that one has waited at least ``displacementGrace``; otherwise the new one
/// is closed at once. A connection waits from its start, and again once no
/// request is in flight on it and its last answer has been written out; a
/// pipelined request or a slow reader keeps it busy (a client that stops
/// reading is bounded by Hummingbird's idle timeout). So silent sockets
/// cannot keep real clients out, and a flood of new connections cannot push
/// out clients whose request is on its way; the price is that while such a
/// flood comes faster than the connections can age, every newcomer is
/// refused, health checks included. One lock guards the counts.
public final class ConnectionLimits: Sendable {
    /// Most connections open at once.
    public let maxConnections: Int
    /// Time a client has to send a whole request head, from the connection's
    /// start or from when the previous answer has been written out.
    public let headerTimeout: TimeAmount
    /// How long a connection must have waited for a request head before a new connection may displace it.
    public static let displacementGrace = TimeAmount.seconds(1)

    private struct State {
        var open = 0
        /// Counted connections waiting for a request head, the longest-waiting oldest, with when they began.
        var waiting = LRUList<ObjectIdentifier, (channel: any Channel, since: NIODeadline)>()
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

    /// Open connections waiting for a request head now.
    public var waitingConnections: Int { state.withLock { $0.waiting.count } }

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
    /// no connection has waited ``displacementGrace`` for a head. At the cap, the connection waiting longest is
    /// closed and `channel` takes its place.
    fileprivate func enter(_ channel: any Channel) -> Bool {
        let now = NIODeadline.now()
        let (entered, displaced) = state.withLock { state -> (Bool, (any Channel)?) in
            var displaced: (any Channel)?
            if state.open < maxConnections {
                state.open += 1
            } else if let oldest = state.waiting.oldestValue, oldest.since + Self.displacementGrace <= now {
                _ = state.waiting.removeOldest()
                state.displaced.insert(ObjectIdentifier(oldest.channel))
                displaced = oldest.channel
            } else {
                return (false, nil)
            }
            state.waiting.insert((channel, now), for: ObjectIdentifier(channel), cost: 0)
            return (true, displaced)
        }
        displaced?.close(promise: nil)
        return entered
    }

    /// Records whether counted `channel` waits for a request head (it may then be displaced).
    fileprivate func setWaiting(_ channel: any Channel, _ waiting: Bool) {
        let key = ObjectIdentifier(channel)
        let now = NIODeadline.now()
        state.withLock { state in
            guard !state.displaced.contains(key) else { return }
            if waiting {
                if state.waiting.slot(for: key) == nil { state.waiting.insert((channel, now), for: key, cost: 0) }
            } else {
                state.waiting.removeValue(forKey: key)
            }
        }
    }

    /// Counts counted `channel` out, unless it was displaced (its place went on to another connection).
    fileprivate func leave(_ channel: any Channel) {
        let key = ObjectIdentifier(channel)
        state.withLock { state in
            state.waiting.removeValue(forKey: key)
            if state.displaced.remove(key) == nil { state.open -= 1 }
        }
    }
}

/// Requests in flight on one connection, for the handlers that act while it waits for a request head: a head
/// starts one, an answer's end finishes one.
struct RequestsInFlight {
    private(set) var count = 0

    /// A request head was read; true when the connection was waiting until now.
    mutating func headRead() -> Bool {
        count += 1
        return count == 1
    }

    /// An answer's end is being written; true when no request is left in flight (an end without a head, such as
    /// the answer to a head that could not be parsed, counts as none).
    mutating func endWritten() -> Bool {
        count = max(0, count - 1)
        return count == 0
    }
}

extension ChannelHandlerContext {
    /// Writes `data` with `promise` and runs `then` on the event loop once it is written to the socket (not when
    /// the write fails).
    func write(_ data: NIOAny, promise: EventLoopPromise<Void>?, then: @escaping () -> Void) {
        let written = promise ?? eventLoop.makePromise()
        write(data, promise: written)
        let action = NIOLoopBound(then, eventLoop: eventLoop)
        written.futureResult.whenSuccess { action.value() }
    }
}

/// Counts a connection in, or closes it at once when the cap is reached and no connection can make room; tells
/// the limits while the connection waits for a request head; counts it out when it closes.
final class ConnectionCapHandler: ChannelDuplexHandler, RemovableChannelHandler {
    typealias InboundIn = HTTPRequestPart
    typealias OutboundIn = HTTPResponsePart
    private let limits: ConnectionLimits
    private var counted = false
    private var requests = RequestsInFlight()

    init(limits: ConnectionLimits) { self.limits = limits }

    func handlerAdded(context: ChannelHandlerContext) {
        counted = limits.enter(context.channel)
        if !counted { context.close(promise: nil) }
    }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        if case .head = unwrapInboundIn(data), requests.headRead(), counted { limits.setWaiting(context.channel, false) }
        context.fireChannelRead(data)
    }

    func write(context: ChannelHandlerContext, data: NIOAny, promise: EventLoopPromise<Void>?) {
        guard case .end = unwrapOutboundIn(data), requests.endWritten(), counted else {
            context.write(data, promise: promise)
            return
        }
        let channel = context.channel
        context.write(data, promise: promise) { [self] in
            // Still nothing in flight once the answer is out (no pipelined head arrived meanwhile).
            if requests.count == 0, counted { limits.setWaiting(channel, true) }
        }
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
/// The clock starts when the connection opens and again once no request is in
/// flight and the last answer has been written out (a pipelined request or a
/// slow reader is not waiting); it stops when a request head has been
/// decoded. One timer at a time checks the deadline: a written answer moves
/// the deadline and a head clears it, so a busy keep-alive connection
/// schedules a timer once per timeout, not once per request.
final class HeaderTimeoutHandler: ChannelDuplexHandler, RemovableChannelHandler {
    typealias InboundIn = HTTPRequestPart
    typealias InboundOut = HTTPRequestPart
    typealias OutboundIn = HTTPResponsePart
    typealias OutboundOut = HTTPResponsePart

    private let timeout: TimeAmount
    private var timer: Scheduled<Void>?
    /// When the awaited request head is due; nil while none is awaited.
    private var deadline: NIODeadline?
    private var requests = RequestsInFlight()
    /// Taken out of the pipeline: written answers no longer arm a timer.
    private var removed = false

    init(timeout: TimeAmount) { self.timeout = timeout }

    func handlerAdded(context: ChannelHandlerContext) { arm(context) }

    func handlerRemoved(context: ChannelHandlerContext) {
        removed = true
        deadline = nil
        timer?.cancel()
        timer = nil
    }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        if case .head = unwrapInboundIn(data) {
            _ = requests.headRead()
            deadline = nil
        }
        context.fireChannelRead(data)
    }

    func write(context: ChannelHandlerContext, data: NIOAny, promise: EventLoopPromise<Void>?) {
        guard case .end = unwrapOutboundIn(data), requests.endWritten() else {
            context.write(data, promise: promise)
            return
        }
        context.write(data, promise: promise) { [self] in
            if requests.count == 0, !removed { arm(context) }
        }
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

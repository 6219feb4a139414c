import Halcyon
import NIOCore

/// The connection-level limits of the service, applied on every HTTP/1
/// connection of the main port by a `ConnectionHandler`: a cap on open
/// connections (imgproxy's `MAX_CLIENTS`) with displacement, a deadline for
/// each request's head (against slowloris clients that trickle header bytes,
/// and idle keep-alive connections), a write timeout for clients that stop
/// reading (as nginx's `send_timeout` with `reset_timedout_connection`), and
/// the signals of clients that hang up (`hangUps`: Hummingbird keeps
/// half-closed connections open, so a request learns of a gone client only
/// through them).
///
/// The policy is in two values: each connection's `ConnectionStateMachine`
/// (deadlines, held closes, keep-alive rules), and the cap's
/// `ConnectionTable` (who is counted and how each waits; at the cap, as
/// nginx does, a newcomer displaces the connection that has waited longest
/// for its client once it has waited ``displacementGrace``, else it is
/// refused). So silent sockets cannot keep real clients out, and a flood of
/// new connections cannot push out clients whose request is on its way; the
/// price is that while such a flood comes faster than the connections can
/// age, every newcomer is refused, health checks included.
///
/// One lock guards the table; it is taken when a connection opens or closes
/// and when its wait changes (a head arrived, an answer was written out,
/// output got stuck or moved): a few times per request, uncontended but for
/// connections that change at the same moment.
public final class ConnectionLimits: Sendable {
    /// Most connections open at once.
    public let maxConnections: Int
    /// Time a client has to send a whole request head, from the connection's
    /// start or from when the previous answer has been written out.
    public let headerTimeout: TimeAmount
    /// Time pending output may go without progress (the client reading) before the connection is reset.
    public let writeTimeout: TimeAmount
    /// How long a connection must have waited for its client before a new connection may displace it.
    public static let displacementGrace = TimeAmount.seconds(1)
    /// Where the connections' handlers report clients that hang up, and requests register to hear of it.
    let hangUps = HangUpSignals()
    let metrics: ServerMetrics?

    private struct State: Sendable {
        var table: ConnectionTable<ObjectIdentifier>
        /// The counted connections' channels, to end a displaced one.
        var channels: [ObjectIdentifier: any Channel] = [:]
    }
    private let state: Locked<State>

    /// Makes the limits: at most `maxConnections` (at least 1) open, a request head due `headerTimeout` after a
    /// connection begins waiting for one, a connection reset when its output makes no progress for `writeTimeout`
    /// (default 10 s); `metrics`, when given, counts the connections displaced and refused at the cap, and those
    /// reset for a client that did not read.
    public init(
        maxConnections: Int, headerTimeout: TimeAmount, writeTimeout: TimeAmount = .seconds(10), metrics: ServerMetrics? = nil
    ) {
        self.maxConnections = max(1, maxConnections)
        self.headerTimeout = headerTimeout
        self.writeTimeout = writeTimeout
        self.metrics = metrics
        state = Locked(State(table: ConnectionTable(capacity: maxConnections, grace: Self.displacementGrace)))
    }

    /// Connections open now.
    public var openConnections: Int { state.withLock { $0.table.open } }

    /// Open connections waiting for their client now (for a request head, or to read an answer).
    public var waitingConnections: Int { counts.waiting }

    /// Connections open, and those of them waiting for their client, read at one moment.
    public var counts: (open: Int, waiting: Int) {
        state.withLock { ($0.table.open, $0.table.waiting) }
    }

    /// Counts `channel` in at `now`, waiting for its first request head; false (not counted: close it) when the cap
    /// is reached and no connection has waited ``displacementGrace`` for its client. At the cap, the connection
    /// waiting longest is ended (reset when it waits for its client to read) and `channel` takes its place.
    func enter(_ channel: any Channel, now: NIODeadline = .now()) -> Bool {
        let key = ObjectIdentifier(channel)
        let (admission, displaced) = state.withLock { state -> (ConnectionTable<ObjectIdentifier>.Admission, (any Channel)?) in
            let admission = state.table.enter(key, now: now)
            var displaced: (any Channel)?
            if case .displacing(let old, _) = admission { displaced = state.channels.removeValue(forKey: old) }
            if admission != .refused { state.channels[key] = channel }
            return (admission, displaced)
        }
        switch admission {
        case .admitted:
            return true
        case .displacing(_, let reset):
            displaced.map { Self.end($0, reset: reset) }
            metrics?.connectionDisplaced()
            return true
        case .refused:
            metrics?.connectionRefused()
            return false
        }
    }

    /// Records how `channel` waits for its client from now on (nothing when it is not counted).
    func update(_ channel: any Channel, _ wait: ConnectionWait) {
        state.withLock { $0.table.update(ObjectIdentifier(channel), wait) }
    }

    /// Counts `channel` out, unless it was displaced (its place went on to another connection) or never counted.
    func leave(_ channel: any Channel) {
        let key = ObjectIdentifier(channel)
        state.withLock { state in
            if state.table.leave(key) { state.channels.removeValue(forKey: key) }
        }
    }

    /// Ends every counted connection at once, from any thread, without waiting for them to close (the end of a
    /// graceful shutdown: what is still open then waits on clients that do not read, or on answers that will not
    /// come): those waiting for a request head are closed, the others reset.
    public func closeAll() {
        let ends = state.withLock { state in
            state.table.endAll().compactMap { end in state.channels[end.id].map { (channel: $0, reset: end.reset) } }
        }
        for end in ends { Self.end(end.channel, reset: end.reset) }
    }

    /// Ends `channel` through its handler, from any thread: its close is then not held for answers still going out.
    static func end(_ channel: any Channel, reset: Bool) {
        channel.triggerUserOutboundEvent(ConnectionHandler.End(reset: reset), promise: nil)
    }
}

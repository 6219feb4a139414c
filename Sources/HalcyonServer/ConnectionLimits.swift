import Halcyon
import NIOCore
import Synchronization

/// The connection-level limits of the service, watched on every HTTP/1
/// connection by a ``ConnectionWatchHandler``: a cap on open connections
/// (imgproxy's `MAX_CLIENTS`), a deadline for each request's head (against
/// slowloris clients that trickle header bytes, and idle keep-alive
/// connections), and the signals of clients that hang up (Hummingbird keeps
/// half-closed connections open, so a request learns of a gone client only
/// through ``hangUps``).
///
/// A client that stops reading is bounded too: a connection whose pending
/// output (an answer not yet written out, or more than the channel's write
/// buffer) makes no progress for ``writeTimeout`` is reset, as nginx's
/// `send_timeout` with `reset_timedout_connection` does.
///
/// At the cap, as nginx does, a new connection takes the place of the
/// connection that has waited longest, which is closed, when that one has
/// waited at least ``displacementGrace``; otherwise the new one is closed at
/// once. A connection waits for its client: for a request head from its
/// start, and again once no request is in flight on it and its last answer
/// has been written out (a new or idle keep-alive connection, or one
/// trickling its head); and for the client to read, from the last progress
/// of pending output (a client that stopped reading). A request being worked
/// on, or an answer being read, keeps it busy. So silent sockets cannot keep
/// real clients out, and a flood of new connections cannot push out clients
/// whose request is on its way; the price is that while such a flood comes
/// faster than the connections can age, every newcomer is refused, health
/// checks included.
///
/// One lock guards the count and the set of connections; it is taken when a
/// connection opens or closes, not per request: each connection records when
/// it began waiting in its own ``ConnectionSlot``, and the set is searched
/// for the longest-waiting one only at the cap.
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

    private struct State {
        var open = 0
        /// The counted connections; a displaced one leaves at once (its place went to the connection that displaced it).
        var slots: [ObjectIdentifier: ConnectionSlot] = [:]
        /// No connection can have waited ``displacementGrace`` before this: a connection's wait only restarts
        /// later or ends, and new ones start now. So at the cap a newcomer is refused without a search until then.
        var noDisplacementBefore = NIODeadline.uptimeNanoseconds(0)
    }
    private let state = Locked(State())
    /// Where the connections' handlers report clients that hang up, and requests register to hear of it.
    let hangUps = HangUpSignals()
    let metrics: ServerMetrics?

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
    }

    /// Connections open now.
    public var openConnections: Int { state.withLock { $0.open } }

    /// Open connections waiting for their client now (for a request head, or to read an answer).
    public var waitingConnections: Int { counts.waiting }

    /// Connections open, and those of them waiting for their client, read at one moment.
    public var counts: (open: Int, waiting: Int) {
        state.withLock { state in (state.open, state.slots.values.count { $0.waitingSince != nil }) }
    }

    /// The handlers for one new connection.
    func handlers() -> [any RemovableChannelHandler] {
        [ConnectionWatchHandler(limits: self)]
    }

    /// Counts `channel` in, waiting for its first request head; nil (not counted) when the cap is reached and no
    /// connection has waited ``displacementGrace`` for its client. At the cap, the connection waiting longest is closed
    /// (reset when it waits for its client to read) and `channel` takes its place.
    func enter(_ channel: any Channel) -> ConnectionSlot? {
        let slot = ConnectionSlot(channel: channel)
        let now = NIODeadline.now()
        let (entered, displaced) = state.withLock { state -> (Bool, (slot: ConnectionSlot, toRead: Bool)?) in
            var displaced: (slot: ConnectionSlot, toRead: Bool)?
            if state.open < maxConnections {
                state.open += 1
            } else {
                guard now >= state.noDisplacementBefore else { return (false, nil) }
                switch Self.claimLongestWaiting(in: state.slots, now: now) {
                case .claimed(let slot, let toRead):
                    state.slots.removeValue(forKey: slot.key)
                    displaced = (slot, toRead)
                case .none(let retryAt):
                    state.noDisplacementBefore = retryAt
                    return (false, nil)
                }
            }
            state.slots[slot.key] = slot
            return (true, displaced)
        }
        if let displaced {
            displaced.slot.end(reset: displaced.toRead)
            metrics?.connectionDisplaced()
        } else if !entered {
            metrics?.connectionRefused()
        }
        return entered ? slot : nil
    }

    /// What a search for a connection to displace found.
    private enum Displacement {
        /// This connection, now taken: it no longer counts as waiting.
        case claimed(ConnectionSlot, toRead: Bool)
        /// None has waited ``displacementGrace``; none can have before `retryAt`.
        case none(retryAt: NIODeadline)
    }

    /// Takes the connection that has waited longest, when it has waited ``displacementGrace`` by `now`. A
    /// connection whose head arrives meanwhile is passed over.
    private static func claimLongestWaiting(in slots: [ObjectIdentifier: ConnectionSlot], now: NIODeadline) -> Displacement {
        var passedOver = Set<ObjectIdentifier>()
        while true {
            var oldest: (slot: ConnectionSlot, since: NIODeadline)?
            for slot in slots.values where !passedOver.contains(slot.key) {
                guard let since = slot.waitingSince, since < oldest?.since ?? .distantFuture else { continue }
                oldest = (slot, since)
            }
            guard let oldest, oldest.since + displacementGrace <= now else {
                return .none(retryAt: min(oldest?.since ?? now, now) + displacementGrace)
            }
            if let toRead = oldest.slot.claim(since: oldest.since) { return .claimed(oldest.slot, toRead: toRead) }
            passedOver.insert(oldest.slot.key)
        }
    }

    /// Ends every counted connection at once, from any thread, without waiting for them to close (the end of a
    /// graceful shutdown: what is still open then waits on clients that do not read, or on answers that will not
    /// come): those waiting for a request head are closed, the others reset.
    public func closeAll() {
        let slots = state.withLock { state in Array(state.slots.values) }
        for slot in slots { slot.end(reset: !slot.waitsForHead) }
    }

    /// Counts `slot`'s connection out, unless it was displaced (its place went on to another connection).
    func leave(_ slot: ConnectionSlot) {
        state.withLock { state in
            guard state.slots[slot.key] === slot else { return }
            state.slots.removeValue(forKey: slot.key)
            state.open -= 1
        }
    }
}

/// One counted connection's state that others read: since when it waits for its client (for a request head, or
/// for pending output to move).
///
/// Written on the connection's event loop (a head arrived, an answer was written out, output moved) without the
/// limits' lock; read, and claimed for displacement, under it.
final class ConnectionSlot: Sendable {
    let channel: any Channel
    let key: ObjectIdentifier
    /// How it waits, in one word: the uptime in nanoseconds when it began waiting, shifted left by one, with the low
    /// bit set when it waits for its client to read output (not for a request head); 0 while a request is in
    /// flight or once claimed.
    private let waiting: Atomic<UInt64>
    /// Set once the limits end the connection: its close must not wait for output.
    private let forced = Atomic(false)

    init(channel: any Channel) {
        self.channel = channel
        self.key = ObjectIdentifier(channel)
        self.waiting = Atomic(Self.word(toRead: false))
    }

    /// The waiting word for a wait that begins now.
    private static func word(toRead: Bool) -> UInt64 {
        max(1, NIODeadline.now().uptimeNanoseconds) << 1 | (toRead ? 1 : 0)
    }

    /// Since when the connection waits for its client; nil while it does not.
    var waitingSince: NIODeadline? {
        let value = waiting.load(ordering: .relaxed)
        return value == 0 ? nil : .uptimeNanoseconds(value >> 1)
    }

    /// Records that the connection waits for its client from now on: to read its output when `toRead`, otherwise
    /// for a request head.
    func startWaiting(toRead: Bool = false) { waiting.store(Self.word(toRead: toRead), ordering: .relaxed) }

    /// Whether the limits ended the connection (its close is not held for output still to be written).
    var closeIsForced: Bool { forced.load(ordering: .relaxed) }

    /// Whether it waits for a request head (not for its client to read, nor on a request in flight).
    var waitsForHead: Bool {
        let value = waiting.load(ordering: .relaxed)
        return value != 0 && value & 1 == 0
    }

    /// Closes the connection at once, from any thread: with a reset (SO_LINGER 0) when `reset`, so the kernel drops
    /// unread output instead of keeping it for an orderly close.
    func end(reset: Bool) {
        forced.store(true, ordering: .relaxed)
        reset ? Self.reset(channel) : channel.close(promise: nil)
    }

    /// Closes `channel` with SO_LINGER 0: a reset, and its unsent output is dropped; from any thread.
    static func reset(_ channel: any Channel) {
        guard let socket = channel as? any SocketOptionProvider else { return channel.close(promise: nil) }
        socket.setSoLinger(NIOLinger(l_onoff: 1, l_linger: 0)).whenComplete { _ in channel.close(promise: nil) }
    }

    /// Records that the connection is busy: a request is being worked on, or its answer is being read.
    func stopWaiting() { waiting.store(0, ordering: .relaxed) }

    /// Takes the connection for displacement if it still waits since `expected`: whether it waited for its client to
    /// read; nil when its client moved meanwhile.
    func claim(since expected: NIODeadline) -> Bool? {
        let value = waiting.load(ordering: .relaxed)
        guard value >> 1 == expected.uptimeNanoseconds,
              waiting.compareExchange(expected: value, desired: 0, ordering: .acquiringAndReleasing).exchanged else { return nil }
        return value & 1 == 1
    }
}

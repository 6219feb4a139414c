import NIOCore

/// The cap on open connections, with displacement, as a value: which
/// connections are counted, and how each waits for its client. Events in
/// (a connection enters, its wait changes, it leaves), decisions out; no
/// channel, clock or lock inside. ``ConnectionLimits`` keeps one behind its
/// lock; tests drive one with made-up times.
///
/// At the cap, as nginx does, a new connection takes the place of the
/// connection that has waited longest for its client, when that one has
/// waited at least ``grace``; otherwise the newcomer is refused. A request
/// being worked on, or an answer being read, keeps a connection busy: it is
/// never displaced.
///
/// Invariants (checked by `ConnectionPolicyStateMachineTests`):
/// - at most ``capacity`` connections are counted, and `open` is the number counted (no separate counter to
///   drift);
/// - a displaced connection is no longer counted when it is displaced, so its later ``leave(_:)`` counts nothing
///   out (its place went to the newcomer);
/// - a connection is displaced only when it waits, and only after waiting ``grace``;
/// - leaving twice, or leaving without having entered, changes nothing.
struct ConnectionTable<ID: Hashable & Sendable>: Sendable {
    /// How a counted connection waits for its client.
    typealias Wait = ConnectionWait

    /// What became of a connection that asked to enter.
    enum Admission: Equatable {
        /// Counted in, under the cap.
        case admitted
        /// Counted in at the cap in place of `ID`, which is no longer counted and must be closed: reset (its unread
        /// output dropped) when `reset`, which is when it waited for its client to read.
        case displacing(ID, reset: Bool)
        /// Not counted: the cap is reached and no connection has waited ``grace``. Close it at once.
        case refused
    }

    /// Most connections counted at once (at least 1).
    let capacity: Int
    /// How long a connection must have waited for its client before a newcomer may displace it.
    let grace: TimeAmount
    /// The counted connections and how each waits.
    private(set) var waits: [ID: Wait] = [:]
    /// No connection can have waited ``grace`` before this: a wait only restarts later or ends, and new ones start
    /// now. So at the cap a newcomer is refused without a search until then.
    private var noDisplacementBefore = NIODeadline.uptimeNanoseconds(0)

    /// Makes an empty table holding at most `capacity` (at least 1) connections.
    init(capacity: Int, grace: TimeAmount) {
        self.capacity = max(1, capacity)
        self.grace = grace
    }

    /// Connections counted now.
    var open: Int { waits.count }

    /// Counted connections waiting for their client now.
    var waiting: Int { waits.values.count { $0 != .busy } }

    /// Counts `id` in, waiting for its first request head since `now`; at the cap, in place of the connection that
    /// has waited longest, when it has waited ``grace``.
    mutating func enter(_ id: ID, now: NIODeadline) -> Admission {
        guard waits[id] == nil else { return .admitted }
        if waits.count < capacity {
            waits[id] = .head(since: now)
            return .admitted
        }
        guard now >= noDisplacementBefore else { return .refused }
        let oldest = longestWaiting()
        guard let oldest, oldest.since + grace <= now else {
            noDisplacementBefore = min(oldest?.since ?? now, now) + grace
            return .refused
        }
        waits.removeValue(forKey: oldest.id)
        waits[id] = .head(since: now)
        if case .read = oldest.wait { return .displacing(oldest.id, reset: true) }
        return .displacing(oldest.id, reset: false)
    }

    /// Records how `id` waits from now on; nothing when it is not counted (refused, displaced, or gone).
    mutating func update(_ id: ID, _ wait: Wait) {
        guard waits[id] != nil else { return }
        waits[id] = wait
    }

    /// Counts `id` out; false (nothing changes) when it was not counted: displaced, refused, or gone already.
    @discardableResult
    mutating func leave(_ id: ID) -> Bool {
        waits.removeValue(forKey: id) != nil
    }

    /// How to end every counted connection at once (the end of a graceful shutdown): those waiting for a request
    /// head are closed, the others reset (they wait on clients that do not read, or on answers that will not come).
    func endAll() -> [(id: ID, reset: Bool)] {
        waits.map { id, wait in
            if case .head = wait { return (id, false) }
            return (id, true)
        }
    }

    /// The connection that has waited longest, how, and since when; nil when none waits.
    private func longestWaiting() -> (id: ID, wait: Wait, since: NIODeadline)? {
        var oldest: (id: ID, wait: Wait, since: NIODeadline)?
        for (id, wait) in waits {
            guard let since = wait.since, since < oldest?.since ?? .distantFuture else { continue }
            oldest = (id, wait, since)
        }
        return oldest
    }
}

/// How a counted connection waits for its client.
enum ConnectionWait: Equatable, Sendable {
    /// A request is being worked on, or its answer is being read: not waiting.
    case busy
    /// For a request head, since then.
    case head(since: NIODeadline)
    /// For its client to read pending output, since the output last moved.
    case read(since: NIODeadline)

    /// Since when it waits; nil while busy.
    var since: NIODeadline? {
        switch self {
        case .busy: nil
        case .head(let since), .read(let since): since
        }
    }
}

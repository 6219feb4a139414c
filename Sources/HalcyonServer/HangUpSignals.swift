import Halcyon
import NIOCore

/// Tells a request's work, as an event, that its client hung up: the
/// connection's handler reports the client's end of input (a half-close,
/// which Hummingbird keeps open) and the end of the connection; work
/// registers a callback for its channel and is called once, at the first of
/// them, instead of polling the connection.
///
/// One lock guards the connections' records; it is taken when a connection
/// is first watched or ends, and twice per request (to register and to
/// cancel a callback). A record leaves when its channel closes.
final class HangUpSignals: Sendable {
    /// One registered callback, to cancel once the work has ended.
    struct Registration: Sendable, Hashable {
        fileprivate let channel: ObjectIdentifier
        fileprivate let id: UInt64
    }

    private struct Record {
        var hungUp = false
        var callbacks: [UInt64: @Sendable () -> Void] = [:]
    }

    private struct State {
        var records: [ObjectIdentifier: Record] = [:]
        var nextID: UInt64 = 0
    }

    private let state = Locked(State())

    /// Makes an empty registry.
    init() {}

    /// Starts watching `channel` (again: nothing): its record lives until the channel closes, when its callbacks
    /// are called if they were not yet. False when the channel is already closed: the client is gone.
    @discardableResult
    func watch(_ channel: any Channel) -> Bool {
        let key = ObjectIdentifier(channel)
        let added = state.withLock { state -> Bool in
            guard state.records[key] == nil else { return false }
            state.records[key] = Record()
            return true
        }
        guard added else { return true }
        // Added after the record, so the record is always removed, even when the channel has closed already.
        channel.closeFuture.whenComplete { [self] _ in self.end(key) }
        return channel.isActive
    }

    /// Records that the client of `channel` hung up (its input ended, or the connection is gone) and calls the
    /// callbacks registered for it; later registrations are refused.
    func hungUp(_ channel: any Channel) {
        fire(ObjectIdentifier(channel), remove: false)
    }

    /// Whether the client of `channel` was seen to hang up (or its connection is closed).
    func hasHungUp(_ channel: any Channel) -> Bool {
        !channel.isActive || state.withLock { $0.records[ObjectIdentifier(channel)]?.hungUp ?? false }
    }

    /// Registers `callback`, called once when the client of `channel` hangs up; nil (and never called) when it
    /// has hung up already or the connection is closed.
    func register(_ channel: any Channel, _ callback: @escaping @Sendable () -> Void) -> Registration? {
        guard watch(channel) else { return nil }
        let key = ObjectIdentifier(channel)
        return state.withLock { state -> Registration? in
            guard var record = state.records[key], !record.hungUp else { return nil }
            state.nextID += 1
            record.callbacks[state.nextID] = callback
            state.records[key] = record
            return Registration(channel: key, id: state.nextID)
        }
    }

    /// Cancels `registration`: its callback is not called any more.
    func cancel(_ registration: Registration) {
        state.withLock { _ = $0.records[registration.channel]?.callbacks.removeValue(forKey: registration.id) }
    }

    /// How many connections are watched now (for tests: records leave with their channels).
    var watchedCount: Int { state.withLock { $0.records.count } }

    private func end(_ key: ObjectIdentifier) { fire(key, remove: true) }

    private func fire(_ key: ObjectIdentifier, remove: Bool) {
        let callbacks = state.withLock { state -> [@Sendable () -> Void] in
            guard var record = state.records[key] else { return [] }
            let callbacks = Array(record.callbacks.values)
            record.callbacks = [:]
            record.hungUp = true
            state.records[key] = remove ? nil : record
            return callbacks
        }
        callbacks.forEach { $0() }
    }
}

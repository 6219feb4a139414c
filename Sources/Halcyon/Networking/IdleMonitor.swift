import Dispatch
import Foundation
import Synchronization

/// What ``IdleMonitor`` watches: one running request, which keeps its own last-activity time.
protocol IdleWatched: AnyObject, Sendable {
    /// When the request last saw activity, in monotonic nanoseconds (``IdleMonitor/now()``).
    var lastActivity: UInt64 { get }
    /// Records activity at `time` (monotonic nanoseconds); called for every chunk, so it is one atomic store.
    func recordActivity(at time: UInt64)
    /// The request was idle for its timeout: stop it. Called once, off the monitor's lock.
    func idleTimeoutFired()
}

/// Fails downloads that stay idle too long, with one sleeping task per downloader.
///
/// Each running fetch registers itself (an ``IdleWatched``, the ``SessionDataTask``
/// that holds its last-activity time) with its timeout, and moves its deadline
/// forward whenever bytes arrive (``Watch/touch()``). A single background task
/// wakes every eighth of the shortest timeout (5 ms to 1 s), fires the expired
/// entries and stops when nothing is registered. Cheaper than a timer task per
/// download: a touch is one atomic store, and a watch allocates nothing of its
/// own. One lock for the entries.
final class IdleMonitor: Sendable {
    private struct Entry {
        let watched: any IdleWatched
        let timeout: UInt64
    }

    private struct State {
        var entries: [Int: Entry] = [:]
        var fired: Set<Int> = []
        var nextID = 0
        var looping = false
    }

    private let state = Locked(State())

    /// Monotonic nanoseconds.
    static func now() -> UInt64 { DispatchTime.now().uptimeNanoseconds }

    /// One registered fetch.
    struct Watch: Sendable {
        let id: Int
        let monitor: IdleMonitor
        let watched: any IdleWatched

        /// Records activity now.
        func touch() {
            watched.recordActivity(at: IdleMonitor.now())
        }

        /// Stops watching; true when the timeout had fired.
        func end() -> Bool {
            monitor.state.withLock { state in
                state.entries[id] = nil
                return state.fired.remove(id) != nil
            }
        }
    }

    /// Starts watching `watched`, active from now; its ``IdleWatched/idleTimeoutFired()`` runs once when it is
    /// idle for `timeout` seconds.
    func watch(_ watched: any IdleWatched, timeout: TimeInterval) -> Watch {
        let nanoseconds = UInt64((max(timeout, 0.001) * 1000).rounded()) * 1_000_000
        watched.recordActivity(at: Self.now())
        let (id, startLoop) = state.withLock { state -> (Int, Bool) in
            let id = state.nextID
            state.nextID += 1
            state.entries[id] = Entry(watched: watched, timeout: nanoseconds)
            defer { state.looping = true }
            return (id, !state.looping)
        }
        if startLoop {
            Task.detached { [weak self] in await self?.loop() }
        }
        return Watch(id: id, monitor: self, watched: watched)
    }

    private func loop() async {
        while true {
            let tick = state.withLock { state -> Duration? in
                guard let shortest = state.entries.values.map(\.timeout).min() else {
                    state.looping = false
                    return nil
                }
                return min(max(.nanoseconds(shortest / 8), .milliseconds(5)), .seconds(1))
            }
            guard let tick else { return }
            try? await Task.sleep(for: tick)
            let now = Self.now()
            let expired = state.withLock { state -> [any IdleWatched] in
                var idle: [any IdleWatched] = []
                // A touch after `now` was read is newer than `now`: not idle.
                for (id, entry) in state.entries where now >= entry.watched.lastActivity &+ entry.timeout {
                    state.entries[id] = nil
                    state.fired.insert(id)
                    idle.append(entry.watched)
                }
                return idle
            }
            expired.forEach { $0.idleTimeoutFired() }
        }
    }
}

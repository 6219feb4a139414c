import Dispatch
import Foundation
import Synchronization

/// Fails downloads that stay idle too long, with one sleeping task per downloader.
///
/// Each running fetch registers a deadline that moves forward whenever bytes
/// arrive (``Watch/touch()``). A single background task wakes every eighth of
/// the shortest timeout (5 ms to 1 s), fires the expired entries and stops
/// when nothing is registered. Cheaper than a timer task per download: a
/// touch is one atomic store, no task per request. One lock for the entries.
final class IdleMonitor: Sendable {
    /// When a fetch was last active, in monotonic nanoseconds; its watch stores, the loop reads.
    final class Activity: Sendable {
        let last = Atomic<UInt64>(IdleMonitor.now())
    }

    private struct Entry {
        let activity: Activity
        let timeout: UInt64
        let onTimeout: @Sendable () -> Void
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
        let activity: Activity

        /// Records activity now.
        func touch() {
            activity.last.store(IdleMonitor.now(), ordering: .relaxed)
        }

        /// Stops watching; true when the timeout had fired.
        func end() -> Bool {
            monitor.state.withLock { state in
                state.entries[id] = nil
                return state.fired.remove(id) != nil
            }
        }
    }

    /// Starts watching; `onTimeout` runs once, off the lock, when idle for `timeout` seconds.
    func watch(timeout: TimeInterval, onTimeout: @escaping @Sendable () -> Void) -> Watch {
        let nanoseconds = UInt64((max(timeout, 0.001) * 1000).rounded()) * 1_000_000
        let activity = Activity()
        let (id, startLoop) = state.withLock { state -> (Int, Bool) in
            let id = state.nextID
            state.nextID += 1
            state.entries[id] = Entry(activity: activity, timeout: nanoseconds, onTimeout: onTimeout)
            defer { state.looping = true }
            return (id, !state.looping)
        }
        if startLoop {
            Task.detached { [weak self] in await self?.loop() }
        }
        return Watch(id: id, monitor: self, activity: activity)
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
            let expired = state.withLock { state -> [@Sendable () -> Void] in
                var callbacks: [@Sendable () -> Void] = []
                // A touch after `now` was read is newer than `now`: not idle.
                for (id, entry) in state.entries where now >= entry.activity.last.load(ordering: .relaxed) &+ entry.timeout {
                    state.entries[id] = nil
                    state.fired.insert(id)
                    callbacks.append(entry.onTimeout)
                }
                return callbacks
            }
            expired.forEach { $0() }
        }
    }
}

import Foundation

/// Fails downloads that stay idle too long, with one sleeping task per downloader.
///
/// Each running fetch registers a deadline that moves forward whenever bytes
/// arrive (``Watch/touch()``). A single background task wakes every eighth of
/// the shortest timeout (5 ms to 1 s), fires the expired entries and stops
/// when nothing is registered. Cheaper than a timer task per download: one
/// lock per touch, no task per request. One lock.
final class IdleMonitor: Sendable {
    private struct Entry {
        var last: ContinuousClock.Instant
        let timeout: Duration
        let onTimeout: @Sendable () -> Void
    }

    private struct State {
        var entries: [Int: Entry] = [:]
        var fired: Set<Int> = []
        var nextID = 0
        var looping = false
    }

    private let state = Locked(State())

    /// One registered fetch.
    struct Watch: Sendable {
        let id: Int
        let monitor: IdleMonitor

        /// Records activity now.
        func touch() {
            let now = ContinuousClock.now
            monitor.state.withLock { $0.entries[id]?.last = now }
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
        let duration = Duration.milliseconds(Int64((max(timeout, 0.001) * 1000).rounded()))
        let (id, startLoop) = state.withLock { state -> (Int, Bool) in
            let id = state.nextID
            state.nextID += 1
            state.entries[id] = Entry(last: .now, timeout: duration, onTimeout: onTimeout)
            defer { state.looping = true }
            return (id, !state.looping)
        }
        if startLoop {
            Task.detached { [weak self] in await self?.loop() }
        }
        return Watch(id: id, monitor: self)
    }

    private func loop() async {
        while true {
            let tick = state.withLock { state -> Duration? in
                guard let shortest = state.entries.values.map(\.timeout).min() else {
                    state.looping = false
                    return nil
                }
                return min(max(shortest / 8, .milliseconds(5)), .seconds(1))
            }
            guard let tick else { return }
            try? await Task.sleep(for: tick)
            let now = ContinuousClock.now
            let expired = state.withLock { state -> [@Sendable () -> Void] in
                var callbacks: [@Sendable () -> Void] = []
                for (id, entry) in state.entries where now - entry.last >= entry.timeout {
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

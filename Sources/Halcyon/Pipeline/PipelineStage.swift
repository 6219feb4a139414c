import Foundation

/// One stage of the retrieve pipeline: runs one piece of work per key and
/// shares its result with every subscriber that asks for the same key meanwhile.
///
/// The key is a `Hashable` value holding everything that changes the result,
/// so two subscribers share work only when they would get the same value.
/// A subscriber that is cancelled stops waiting at once and gets
/// `CancellationError`; the work itself is cancelled only when its last
/// subscriber is gone (Nuke's rule), and that subscriber returns once the work
/// has ended, so no work it started is still running. The work's
/// ``LoadPriority`` is the highest of its current subscribers' priorities: it
/// rises when a subscriber joins or raises its own, and falls when one leaves.
/// Every subscriber is resumed exactly once, by the work's task when it ends
/// or by its own cancellation. Thread-safe: one lock for the entries; each
/// entry's waiters are handed over under it.
final class PipelineStage<Key: Hashable & Sendable, Value: Sendable>: Sendable {
    private struct Subscriber {
        let waiter: Waiter<Value>
        let priority: LoadPriority
        let observation: Int
    }

    private struct Entry {
        let generation: Int
        let task: Task<Void, Never>
        let priority: LoadPriority
        var subscribers: [Int: Subscriber] = [:]
    }

    private struct State {
        var entries: [Key: Entry] = [:]
        /// Entries whose last subscriber left, until their work ends (by generation).
        var cancelled: [Int: [Waiter<Value>]] = [:]
        var nextID = 0
    }

    /// A subscriber's link to its entry, and whether it was cancelled before it had one.
    private struct Registration {
        var subscription: (generation: Int, id: Int)?
        var cancelled = false
    }

    private let state = Locked(State())

    /// How many keys have work in flight.
    var inFlightCount: Int { state.withLock { $0.entries.count } }

    /// The priority of the work running for `key` (nil when none runs); a test hook.
    func priority(forKey key: Key) -> Float? {
        state.withLock { $0.entries[key]?.priority.value }
    }

    /// The result of `work` for `key`, started now or shared with the subscribers already waiting.
    ///
    /// `priority` is this subscriber's (it may change while it waits); `work`
    /// gets the stage's, to pass on to the stages and loaders it uses.
    func value(
        forKey key: Key,
        priority: LoadPriority,
        work: @escaping @Sendable (LoadPriority) async throws -> Value
    ) async throws -> Value {
        let waiter = Waiter<Value>()
        defer { waiter.acknowledge() }
        // The handler is installed before the work exists, so a cancel can never
        // slip between starting the work and being able to stop it.
        let registration = Locked(Registration())
        let value = try await withTaskCancellationHandler {
            try await withCheckedThrowingContinuation { (continuation: CheckedContinuation<Value, any Error>) in
                waiter.attach(continuation)
                let subscribed = registration.withLock { registration -> Bool in
                    guard !registration.cancelled else { return false }
                    registration.subscription = subscribe(key, waiter: waiter, priority: priority, work: work)
                    return true
                }
                if !subscribed { _ = waiter.finish(with: .failure(CancellationError())) }
            }
        } onCancel: {
            let subscription = registration.withLock { registration -> (generation: Int, id: Int)? in
                registration.cancelled = true
                return registration.subscription
            }
            // Not subscribed yet: the operation sees `cancelled` and never subscribes.
            if let subscription { self.unsubscribe(key, generation: subscription.generation, id: subscription.id) }
        }
        try Task.checkCancellation()
        return value
    }

    // MARK: - Subscribers

    private func subscribe(
        _ key: Key, waiter: Waiter<Value>, priority: LoadPriority,
        work: @escaping @Sendable (LoadPriority) async throws -> Value
    ) -> (generation: Int, id: Int) {
        let (generation, id) = state.withLock { state -> (Int, Int) in
            let id = state.nextID
            state.nextID += 1
            if var entry = state.entries[key] {
                entry.subscribers[id] = Subscriber(waiter: waiter, priority: priority, observation: -1)
                state.entries[key] = entry
                return (entry.generation, id)
            }
            let stagePriority = LoadPriority(priority.value)
            let task = Task { await self.run(key, generation: id, priority: stagePriority, work: work) }
            var entry = Entry(generation: id, task: task, priority: stagePriority)
            entry.subscribers[id] = Subscriber(waiter: waiter, priority: priority, observation: -1)
            state.entries[key] = entry
            return (id, id)
        }
        let observation = priority.observe { [weak self] _ in self?.updatePriority(key, generation: generation) }
        let observed = state.withLock { state -> Bool in
            guard state.entries[key]?.generation == generation, let subscriber = state.entries[key]?.subscribers[id] else { return false }
            state.entries[key]?.subscribers[id] = Subscriber(waiter: subscriber.waiter, priority: priority, observation: observation)
            return true
        }
        if observed {
            updatePriority(key, generation: generation)
        } else {
            priority.removeObserver(observation)
        }
        return (generation, id)
    }

    /// Runs the work of one entry, then resumes every subscriber still attached to it.
    private func run(
        _ key: Key, generation: Int, priority: LoadPriority, work: @escaping @Sendable (LoadPriority) async throws -> Value
    ) async {
        let result: Result<Value, any Error>
        do {
            result = .success(try await work(priority))
        } catch {
            result = .failure(error)
        }
        let (subscribers, draining) = state.withLock { state -> ([Subscriber], [Waiter<Value>]) in
            let draining = state.cancelled.removeValue(forKey: generation) ?? []
            guard let entry = state.entries[key], entry.generation == generation else { return ([], draining) }
            state.entries[key] = nil
            return (Array(entry.subscribers.values), draining)
        }
        for subscriber in subscribers {
            subscriber.priority.removeObserver(subscriber.observation)
            _ = subscriber.waiter.finish(with: result)
        }
        for waiter in draining { _ = waiter.finish(with: result) }
    }

    /// Takes subscriber `id` out of its entry. The last one cancels the work and
    /// is resumed when the work ends; any other is resumed at once with `CancellationError`.
    private func unsubscribe(_ key: Key, generation: Int, id: Int) {
        let outcome = state.withLock { state -> (Subscriber, Task<Void, Never>?)? in
            guard var entry = state.entries[key], entry.generation == generation,
                  let subscriber = entry.subscribers.removeValue(forKey: id) else { return nil }
            guard entry.subscribers.isEmpty else {
                state.entries[key] = entry
                return (subscriber, nil)
            }
            state.entries[key] = nil
            state.cancelled[generation, default: []].append(subscriber.waiter)
            return (subscriber, entry.task)
        }
        guard let (subscriber, task) = outcome else { return }
        subscriber.priority.removeObserver(subscriber.observation)
        if let task {
            task.cancel()
        } else {
            _ = subscriber.waiter.finish(with: .failure(CancellationError()))
            updatePriority(key, generation: generation)
        }
    }

    /// Sets the work's priority to the highest of its subscribers'.
    ///
    /// Read and set under the stage's lock, so that of two updates racing, the
    /// later one leaves the value current at its time (the priority's
    /// observers then run under this lock; they only take locks further down
    /// the pipeline, never this stage's).
    private func updatePriority(_ key: Key, generation: Int) {
        state.withLock { state in
            guard let entry = state.entries[key], entry.generation == generation, !entry.subscribers.isEmpty else { return }
            var highest: Float = 0
            for subscriber in entry.subscribers.values { highest = max(highest, subscriber.priority.value) }
            entry.priority.value = highest
        }
    }
}

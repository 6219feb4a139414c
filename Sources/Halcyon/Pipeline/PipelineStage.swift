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
///
/// Joining, leaving and a priority change cost the same however many
/// subscribers share a key (thousands do when many prefetchers or views ask
/// for one URL at once): an entry is changed in place, never copied, and it
/// counts its subscribers per priority value, so the highest is found among
/// the few distinct values rather than by visiting every subscriber.
final class PipelineStage<Key: Hashable & Sendable, Value: Sendable>: Sendable {
    private struct Subscriber {
        let waiter: Waiter<Value>
        let priority: LoadPriority
        /// The priority's value as last counted in ``Entry/priorityCounts``.
        var counted: Float
        var observation: Int
    }

    private struct Entry {
        let generation: Int
        let task: Task<Void, Never>
        let priority: LoadPriority
        var subscribers: [Int: Subscriber] = [:]
        /// How many subscribers have each priority value.
        var priorityCounts: [Float: Int] = [:]

        init(generation: Int, task: Task<Void, Never>, priority: LoadPriority) {
            self.generation = generation
            self.task = task
            self.priority = priority
        }

        mutating func add(_ subscriber: Subscriber, id: Int) {
            subscribers[id] = subscriber
            priorityCounts[subscriber.counted, default: 0] += 1
        }

        /// Adds a subscriber to running work and raises the work's priority to its own if higher; the generation.
        mutating func join(_ subscriber: Subscriber, id: Int) -> Int {
            add(subscriber, id: id)
            publishPriority()
            return generation
        }

        /// Records subscriber `id`'s observation token and counts its priority's current value (it may have
        /// changed before the observer was installed); false when the subscriber has left or the work has ended.
        mutating func observed(_ id: Int, token: Int, generation: Int) -> Bool {
            guard generation == self.generation, subscribers[id] != nil else { return false }
            subscribers[id]?.observation = token
            recount(id)
            publishPriority()
            return true
        }

        /// Counts subscriber `id` at its priority's new value and publishes the highest.
        mutating func priorityChanged(_ id: Int, generation: Int) {
            guard generation == self.generation else { return }
            recount(id)
            publishPriority()
        }

        mutating func remove(_ id: Int) -> Subscriber? {
            guard let subscriber = subscribers.removeValue(forKey: id) else { return nil }
            uncount(subscriber.counted)
            return subscriber
        }

        /// Counts subscriber `id` at its priority's current value.
        mutating func recount(_ id: Int) {
            guard let subscriber = subscribers[id] else { return }
            let value = subscriber.priority.value
            guard value != subscriber.counted else { return }
            uncount(subscriber.counted)
            priorityCounts[value, default: 0] += 1
            subscribers[id]?.counted = value
        }

        /// Sets the work's priority to the highest of its subscribers' (unchanged when none is left).
        func publishPriority() {
            guard let highest = priorityCounts.keys.max() else { return }
            priority.value = highest
        }

        private mutating func uncount(_ value: Float) {
            let count = (priorityCounts[value] ?? 1) - 1
            priorityCounts[value] = count > 0 ? count : nil
        }
    }

    private struct State {
        var entries: [Key: Entry] = [:]
        /// Entries whose last subscriber left, until their work ends (by generation).
        var cancelled: [Int: [Waiter<Value>]] = [:]
        var nextID = 0

        /// Whether the entry of `key` is the one of `generation`.
        func isCurrent(_ key: Key, _ generation: Int) -> Bool {
            entries[key]?.generation == generation
        }
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
        let subscriber = Subscriber(waiter: waiter, priority: priority, counted: priority.value, observation: -1)
        let (generation, id) = state.withLock { state -> (Int, Int) in
            let id = state.nextID
            state.nextID += 1
            // One lookup of the key (hashing a stage key is not free), the entry changed in place.
            if let generation = state.entries[key]?.join(subscriber, id: id) {
                return (generation, id)
            }
            let stagePriority = LoadPriority(subscriber.counted)
            // Started from a queue's job (a task that prefers that queue), the work stays on that queue's threads.
            let task = Task(executorPreference: WorkQueue.current) {
                await self.run(key, generation: id, priority: stagePriority, work: work)
            }
            var entry = Entry(generation: id, task: task, priority: stagePriority)
            entry.add(subscriber, id: id)
            state.entries[key] = entry
            return (id, id)
        }
        let observation = priority.observe { [weak self] _ in self?.priorityChanged(key, generation: generation, id: id) }
        // A change between reading the value and observing it is counted here.
        let observed = state.withLock { $0.entries[key]?.observed(id, token: observation, generation: generation) ?? false }
        if !observed { priority.removeObserver(observation) }
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
            guard state.isCurrent(key, generation), let entry = state.entries.removeValue(forKey: key) else { return ([], draining) }
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
            guard state.isCurrent(key, generation), let subscriber = state.entries[key]?.remove(id) else { return nil }
            guard state.entries[key]?.subscribers.isEmpty == true, let entry = state.entries.removeValue(forKey: key) else {
                state.entries[key]?.publishPriority()
                return (subscriber, nil)
            }
            state.cancelled[generation, default: []].append(subscriber.waiter)
            return (subscriber, entry.task)
        }
        guard let (subscriber, task) = outcome else { return }
        subscriber.priority.removeObserver(subscriber.observation)
        if let task {
            task.cancel()
        } else {
            _ = subscriber.waiter.finish(with: .failure(CancellationError()))
        }
    }

    /// Counts subscriber `id` at its priority's new value and sets the work's to the highest.
    ///
    /// Read and set under the stage's lock, so that of two updates racing, the
    /// later one leaves the value current at its time (the priority's
    /// observers then run under this lock; they only take locks further down
    /// the pipeline, never this stage's).
    private func priorityChanged(_ key: Key, generation: Int, id: Int) {
        state.withLock { $0.entries[key]?.priorityChanged(id, generation: generation) }
    }
}

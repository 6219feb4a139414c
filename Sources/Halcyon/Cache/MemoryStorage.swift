import Foundation

/// Namespace of the in-memory cache layer, in Kingfisher's `MemoryStorage` shape.
public enum MemoryStorage {
    /// An LRU cache of values in memory, bounded by total cost and by count.
    ///
    /// All members are thread-safe: one lock guards the whole state. A hit is
    /// a dictionary lookup plus relinking two list nodes held in one array, so
    /// it is O(1) and allocates nothing. Each value carries its own
    /// ``StorageExpiration``; an expired value is never returned and is removed
    /// when it is read, and by a periodic clean every `cleanInterval` seconds.
    /// The clean runs on a detached task, needs no run loop, holds the storage
    /// only weakly and stops when the storage is released.
    public final class Backend<T: CacheCostCalculable & Sendable>: Sendable {
        @usableFromInline let state: Locked<LRUState<T>>
        private let cleanTask: Locked<Task<Void, Never>?> = Locked(nil)
        @usableFromInline let clock: CacheClock

        /// The limits and defaults in use; setting it evicts at once down to the new limits.
        public var config: Config {
            get { state.withLock { $0.config } }
            set { state.withLock { $0.config = newValue; $0.evictToLimits() } }
        }

        /// Makes an empty storage and starts its periodic clean.
        ///
        /// `clock` gives "now" for expiration; inject one in tests.
        public init(config: Config, clock: CacheClock = .system) {
            self.state = Locked(LRUState(config: config))
            self.clock = clock
            let interval = config.cleanInterval
            guard interval > 0, interval.isFinite else { return }
            let nanoseconds = UInt64(min(interval, 1e9) * 1_000_000_000)
            let task = Task.detached(priority: .utility) { [weak self] in
                while !Task.isCancelled {
                    try? await Task.sleep(nanoseconds: nanoseconds)
                    guard let storage = self else { return }
                    storage.removeExpired()
                }
            }
            cleanTask.withLock { $0 = task }
        }

        deinit {
            cleanTask.withLock { $0?.cancel() }
        }

        // MARK: - Storing

        /// Stores `value` under `key`, replacing any value there, and evicts least-recently-used values to fit the limits.
        ///
        /// `expiration` defaults to `config.expiration`. A value whose
        /// expiration is already past, or whose cost alone exceeds
        /// `totalCostLimit`, is not stored, and any older value under `key` is
        /// removed so it is not served in its place.
        @inlinable
        public func store(value: T, forKey key: String, expiration: StorageExpiration? = nil) {
            let now = clock.now()
            let cost = value.cacheCost
            state.withLock { state in
                let expiration = expiration ?? state.config.expiration
                let expiresAt = expiration.estimatedExpirationSince(now)
                guard expiresAt > now, cost <= state.config.totalCostLimit else {
                    state.remove(forKey: key)
                    return
                }
                state.insert(key: key, value: value, cost: cost, expiration: expiration, expiresAt: expiresAt)
                state.evictToLimits()
            }
        }

        // MARK: - Reading

        /// The value under `key` if there is one and it has not expired, marking it most recently used.
        ///
        /// `extendingExpiration` (default `.cacheTime`) moves the value's
        /// expiration date forward from now. An expired value is removed and
        /// `nil` is returned.
        @inlinable
        public func value(forKey key: String, extendingExpiration: ExpirationExtending = .cacheTime) -> T? {
            let now = clock.now()
            return state.withLock { state in
                state.hit(forKey: key, now: now, extending: extendingExpiration)
            }
        }

        /// Whether an unexpired value is stored under `key`; does not touch its recency or expiration.
        @inlinable
        public func isCached(forKey key: String) -> Bool {
            let now = clock.now()
            return state.withLock { state in
                guard let index = state.index[key] else { return false }
                return state.nodes[index].expiresAt > now
            }
        }

        // MARK: - Removing

        /// Removes the value under `key`, if any.
        public func remove(forKey key: String) {
            state.withLock { $0.remove(forKey: key) }
        }

        /// Removes every value.
        public func removeAll() {
            state.withLock { $0.removeAll() }
        }

        /// Removes every value whose expiration date has passed; the periodic clean calls this.
        public func removeExpired() {
            let now = clock.now()
            state.withLock { $0.removeExpired(now: now) }
        }

        // MARK: - Inspecting

        /// How many values are stored, expired ones not yet removed included.
        public var count: Int { state.withLock { $0.index.count } }

        /// The summed cost of the stored values.
        public var totalCost: Int { state.withLock { $0.totalCost } }

        /// The stored keys from most to least recently used.
        public var keysByRecency: [String] {
            state.withLock { state in
                var keys: [String] = []
                keys.reserveCapacity(state.index.count)
                var cursor = state.head
                while cursor >= 0 {
                    keys.append(state.nodes[cursor].key)
                    cursor = state.nodes[cursor].next
                }
                return keys
            }
        }
    }

    /// The limits of a ``MemoryStorage/Backend``.
    public struct Config: Sendable {
        /// Largest summed cost (bytes) kept; least-recently-used values go first.
        ///
        /// Default: a quarter of physical memory, at most 1 GiB.
        public var totalCostLimit: Int
        /// Largest number of values kept; 0 means no limit. Default no limit.
        public var countLimit: Int
        /// Expiration of values stored without one. Default 300 seconds.
        public var expiration: StorageExpiration
        /// Seconds between sweeps that remove expired values; 0 disables them. Default 120.
        public let cleanInterval: TimeInterval

        /// Makes a config; see each property for its default.
        public init(
            totalCostLimit: Int = Config.defaultTotalCostLimit,
            countLimit: Int = 0,
            expiration: StorageExpiration = .seconds(300),
            cleanInterval: TimeInterval = 120
        ) {
            self.totalCostLimit = totalCostLimit
            self.countLimit = countLimit
            self.expiration = expiration
            self.cleanInterval = cleanInterval
        }

        /// A quarter of the physical memory, capped at 1 GiB.
        public static var defaultTotalCostLimit: Int {
            let quarter = ProcessInfo.processInfo.physicalMemory / 4
            return Int(min(quarter, 1 << 30))
        }
    }
}

// MARK: - LRU state

/// The state behind one ``MemoryStorage/Backend``; only touched under its mutex.
///
/// A doubly linked list threaded through `nodes` by index, most recent at
/// `head`; freed slots are reused so steady-state use allocates nothing.
@usableFromInline
struct LRUState<T> {
    @usableFromInline
    struct Node {
        @usableFromInline var key: String
        @usableFromInline var value: T?
        @usableFromInline var cost: Int
        @usableFromInline var expiration: StorageExpiration
        @usableFromInline var expiresAt: Date
        @usableFromInline var previous: Int
        @usableFromInline var next: Int

        @inlinable
        init(key: String, value: T?, cost: Int, expiration: StorageExpiration, expiresAt: Date, previous: Int, next: Int) {
            self.key = key
            self.value = value
            self.cost = cost
            self.expiration = expiration
            self.expiresAt = expiresAt
            self.previous = previous
            self.next = next
        }
    }

    @usableFromInline var config: MemoryStorage.Config
    @usableFromInline var index: [String: Int] = [:]
    @usableFromInline var nodes: [Node] = []
    @usableFromInline var freeSlots: [Int] = []
    @usableFromInline var head = -1
    @usableFromInline var tail = -1
    @usableFromInline var totalCost = 0

    init(config: MemoryStorage.Config) {
        self.config = config
    }

    @inlinable
    mutating func hit(forKey key: String, now: Date, extending: ExpirationExtending) -> T? {
        guard let slot = index[key] else { return nil }
        if nodes[slot].expiresAt <= now {
            remove(slot: slot)
            return nil
        }
        switch extending {
        case .none:
            break
        case .cacheTime:
            nodes[slot].expiresAt = nodes[slot].expiration.estimatedExpirationSince(now)
        case .expirationTime(let expiration):
            nodes[slot].expiration = expiration
            nodes[slot].expiresAt = expiration.estimatedExpirationSince(now)
        }
        moveToHead(slot)
        return nodes[slot].value
    }

    @inlinable
    mutating func insert(key: String, value: T, cost: Int, expiration: StorageExpiration, expiresAt: Date) {
        if let slot = index[key] {
            totalCost += cost - nodes[slot].cost
            nodes[slot].value = value
            nodes[slot].cost = cost
            nodes[slot].expiration = expiration
            nodes[slot].expiresAt = expiresAt
            moveToHead(slot)
            return
        }
        let node = Node(key: key, value: value, cost: cost, expiration: expiration, expiresAt: expiresAt,
                        previous: -1, next: head)
        let slot: Int
        if let free = freeSlots.popLast() {
            slot = free
            nodes[slot] = node
        } else {
            slot = nodes.count
            nodes.append(node)
        }
        if head >= 0 { nodes[head].previous = slot }
        head = slot
        if tail < 0 { tail = slot }
        index[key] = slot
        totalCost += cost
    }

    @inlinable
    mutating func evictToLimits() {
        while tail >= 0, totalCost > config.totalCostLimit || (config.countLimit > 0 && index.count > config.countLimit) {
            remove(slot: tail)
        }
    }

    @inlinable
    mutating func remove(forKey key: String) {
        if let slot = index[key] { remove(slot: slot) }
    }

    @inlinable
    mutating func removeExpired(now: Date) {
        var cursor = head
        while cursor >= 0 {
            let next = nodes[cursor].next
            if nodes[cursor].expiresAt <= now { remove(slot: cursor) }
            cursor = next
        }
    }

    @inlinable
    mutating func removeAll() {
        index.removeAll()
        nodes.removeAll()
        freeSlots.removeAll()
        head = -1
        tail = -1
        totalCost = 0
    }

    @inlinable
    mutating func unlink(_ slot: Int) {
        let previous = nodes[slot].previous
        let next = nodes[slot].next
        if previous >= 0 { nodes[previous].next = next } else { head = next }
        if next >= 0 { nodes[next].previous = previous } else { tail = previous }
        nodes[slot].previous = -1
        nodes[slot].next = -1
    }

    @inlinable
    mutating func moveToHead(_ slot: Int) {
        guard head != slot else { return }
        unlink(slot)
        nodes[slot].next = head
        if head >= 0 { nodes[head].previous = slot }
        head = slot
        if tail < 0 { tail = slot }
    }

    @inlinable
    mutating func remove(slot: Int) {
        unlink(slot)
        index.removeValue(forKey: nodes[slot].key)
        totalCost -= nodes[slot].cost
        nodes[slot].value = nil
        nodes[slot].key = ""
        nodes[slot].cost = 0
        freeSlots.append(slot)
    }
}

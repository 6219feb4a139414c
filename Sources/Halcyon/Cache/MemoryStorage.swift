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
            set { _ = state.withLock { $0.config = newValue; return $0.evictToLimits() } }
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
            // What the store replaces or evicts comes out of the lock and is released after it.
            _ = state.withLock { state -> (replaced: LRUState<T>.Entry?, evicted: [LRUState<T>.Entry]) in
                let expiration = expiration ?? state.config.expiration
                let expiresAt = expiration.estimatedExpirationSince(now)
                guard expiresAt > now, cost <= state.config.totalCostLimit else {
                    return (state.remove(forKey: key), [])
                }
                let replaced = state.insert(key: key, value: value, cost: cost, expiration: expiration, expiresAt: expiresAt)
                return (replaced, state.evictToLimits())
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
            }.value
        }

        /// Whether an unexpired value is stored under `key`; does not touch its recency or expiration.
        @inlinable
        public func isCached(forKey key: String) -> Bool {
            let now = clock.now()
            return state.withLock { $0.holds(key, now: now) }
        }

        // MARK: - Removing

        /// Removes the value under `key`, if any.
        public func remove(forKey key: String) {
            _ = state.withLock { $0.remove(forKey: key) }
        }

        /// Removes every value.
        public func removeAll() {
            _ = state.withLock { $0.removeAll() }
        }

        /// Removes every value whose expiration date has passed; the periodic clean calls this.
        public func removeExpired() {
            let now = clock.now()
            _ = state.withLock { $0.removeExpired(now: now) }
        }

        // MARK: - Inspecting

        /// How many values are stored, expired ones not yet removed included.
        public var count: Int { state.withLock { $0.list.count } }

        /// The summed cost of the stored values.
        public var totalCost: Int { state.withLock { $0.list.totalCost } }

        /// The stored keys from most to least recently used.
        public var keysByRecency: [String] {
            state.withLock { $0.list.keysByRecency }
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
/// The values in order of use (``LRUList``), each with its expiration, and the limits they are held to.
@usableFromInline
struct LRUState<T> {
    /// A stored value and when it expires.
    @usableFromInline
    struct Entry {
        @usableFromInline var value: T
        @usableFromInline var expiration: StorageExpiration
        @usableFromInline var expiresAt: Date

        @inlinable
        init(value: T, expiration: StorageExpiration, expiresAt: Date) {
            self.value = value
            self.expiration = expiration
            self.expiresAt = expiresAt
        }
    }

    @usableFromInline var config: MemoryStorage.Config
    @usableFromInline var list = LRUList<String, Entry>()

    init(config: MemoryStorage.Config) {
        self.config = config
    }

    /// The value under `key` unless expired, moved to the recent end; an expired one is removed and handed back.
    @inlinable
    mutating func hit(forKey key: String, now: Date, extending: ExpirationExtending) -> (value: T?, removed: Entry?) {
        guard let slot = list.slot(for: key), let entry = list.value(at: slot) else { return (nil, nil) }
        if entry.expiresAt <= now {
            return (nil, list.remove(slot))
        }
        switch extending {
        case .none:
            break
        case .cacheTime:
            list.update(at: slot) { $0.expiresAt = $0.expiration.estimatedExpirationSince(now) }
        case .expirationTime(let expiration):
            list.update(at: slot) { entry in
                entry.expiration = expiration
                entry.expiresAt = expiration.estimatedExpirationSince(now)
            }
        }
        list.touch(slot)
        return (entry.value, nil)
    }

    /// Whether `key` has a value that has not expired by `now`; its recency is unchanged.
    @inlinable
    func holds(_ key: String, now: Date) -> Bool {
        guard let slot = list.slot(for: key), let entry = list.value(at: slot) else { return false }
        return entry.expiresAt > now
    }

    /// Stores a value as the most recently used; hands back the entry it replaced.
    @inlinable
    mutating func insert(key: String, value: T, cost: Int, expiration: StorageExpiration, expiresAt: Date) -> Entry? {
        list.insert(Entry(value: value, expiration: expiration, expiresAt: expiresAt), for: key, cost: cost)
    }

    /// Removes least-recently-used entries until the limits hold; hands them back.
    @inlinable
    mutating func evictToLimits() -> [Entry] {
        list.evictOldest(whileCostAbove: config.totalCostLimit, orCountAbove: config.countLimit > 0 ? config.countLimit : .max)
    }

    @inlinable
    mutating func remove(forKey key: String) -> Entry? {
        list.removeValue(forKey: key)
    }

    /// Removes the expired values and hands them back, so the caller releases them after the lock.
    mutating func removeExpired(now: Date) -> [Entry] {
        list.removeAll { $0.expiresAt <= now }
    }

    /// Empties the storage; hands back the old list, so its values are released after the lock.
    mutating func removeAll() -> LRUList<String, Entry> {
        defer { list = LRUList() }
        return list
    }
}

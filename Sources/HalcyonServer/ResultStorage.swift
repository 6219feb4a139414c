import Foundation
import Halcyon
import Logging
import Tracing

/// Encoded results of http(s) sources below the in-memory ``ResponseCache``:
/// an ordered list of ``DataStorageTier``s, nearest first (the local disk,
/// then, for a fleet, the shared Redis), so another kind of store is one more
/// conformance in the list.
///
/// Stores the response body as it was sent, with its content type and ETag,
/// so a hit costs one read and no decode or encode. A hit in a later tier is
/// copied to the tiers before it. Writes go to every tier in the background;
/// one the caller does not wait for is dropped when more than
/// `maxPendingWrites` are queued (the result is still served). A tier that
/// fails is a miss: the service goes on from the other tiers and the origin,
/// counts each failure of a remote tier in `/metrics`
/// (``ServerMetrics/storageError(tier:)``), and logs once when it goes down and
/// once when it is back (see ``TierHealth``).
final class ResultStorage: Sendable {
    /// One tier and how its entries are kept.
    struct Tier: Sendable {
        /// The store.
        let storage: any DataStorageTier
        /// How long its entries live; nil: until the store evicts them.
        let lifetime: Duration?
        /// Failures are counted and logged (remote stores); nil for a local folder, whose failures are misses only.
        let health: TierHealth?
    }

    /// The tiers, nearest first.
    let tiers: [Tier]
    private let pendingWrites = Locked(0)
    private let maxPendingWrites: Int
    private let metrics: ServerMetrics

    /// Makes the storage over `tiers`, nearest first.
    init(tiers: [Tier], metrics: ServerMetrics, maxPendingWrites: Int = 64) {
        self.tiers = tiers
        self.metrics = metrics
        self.maxPendingWrites = maxPendingWrites
    }

    /// Makes the storage of a local disk and, for a fleet, a shared tier whose entries live `sharedLifetime`
    /// (nil: until the store evicts them).
    convenience init(
        local: DiskDataStorage, shared: (any DataStorageTier)?, sharedLifetime: Duration?, metrics: ServerMetrics,
        logger: Logger, maxPendingWrites: Int = 64
    ) {
        var tiers = [Tier(storage: local, lifetime: nil, health: nil)]
        if let shared {
            tiers.append(Tier(storage: shared, lifetime: sharedLifetime, health: TierHealth(name: shared.name, logger: logger)))
        }
        self.init(tiers: tiers, metrics: metrics, maxPendingWrites: maxPendingWrites)
    }

    /// The stored response for `key` and the name of the tier it came from, or nil.
    func value(for key: String) async -> (entry: ResponseCache.Entry, tier: String)? {
        for (index, tier) in tiers.enumerated() {
            guard index == 0 || !Task.isCancelled else { return nil }
            guard let stored = await lookUp(key, in: tier), let entry = Self.entry(stored) else { continue }
            let nearer = tiers.prefix(index)
            if !nearer.isEmpty {
                enqueue { for tier in nearer { try? await tier.storage.store(stored, forKey: key, lifetime: tier.lifetime) } }
            }
            return (entry, tier.storage.name)
        }
        return nil
    }

    /// Queues writes of `entry` under `key` to every tier; returns at once.
    func store(_ entry: ResponseCache.Entry, for key: String) {
        let stored = StoredData(data: entry.body, contentType: entry.contentType, etag: entry.etag, created: entry.created)
        enqueue { [tiers] in
            for tier in tiers {
                do throws(HalcyonError) {
                    try await tier.storage.store(stored, forKey: key, lifetime: tier.lifetime)
                    tier.health?.succeeded()
                } catch {
                    self.noteFailure(error, tier: tier)
                }
            }
        }
    }

    // MARK: - Helpers

    /// One tier's value, traced; a failure is a miss.
    private func lookUp(_ key: String, in tier: Tier) async -> StoredData? {
        let span = startSpan("halcyon.cache.lookup", context: ServiceContext.current ?? .topLevel, ofKind: tier.health == nil ? .internal : .client)
        span.attributes["halcyon.cache.tier"] = tier.storage.name
        defer { span.end() }
        do {
            let stored = try await tier.storage.value(forKey: key)
            span.attributes["halcyon.cache.hit"] = stored != nil
            tier.health?.succeeded()
            return stored
        } catch {
            if tier.health != nil { span.recordError(error) }
            noteFailure(error, tier: tier)
            return nil
        }
    }

    private func noteFailure(_ error: HalcyonError, tier: Tier) {
        guard let health = tier.health else { return }
        if case .requestError(.taskCancelled) = error { return }
        metrics.storageError(tier: tier.storage.name)
        health.failed(error)
    }

    /// Runs `write` in the background unless too many writes are pending.
    private func enqueue(_ write: @escaping @Sendable () async -> Void) {
        let admitted = pendingWrites.withLock { pending -> Bool in
            guard pending < maxPendingWrites else { return false }
            pending += 1
            return true
        }
        guard admitted else { return }
        Task { [pendingWrites] in
            await write()
            pendingWrites.withLock { $0 -= 1 }
        }
    }

    private static func entry(_ stored: StoredData) -> ResponseCache.Entry? {
        guard let contentType = stored.contentType, let etag = stored.etag else { return nil }
        return ResponseCache.Entry(body: stored.data, contentType: contentType, etag: etag, created: stored.created)
    }
}

/// Whether a storage tier works, logging only the changes: one warning when
/// it starts failing, one notice when it answers again. One lock.
final class TierHealth: Sendable {
    private let name: String
    private let logger: Logger
    private let down = Locked(false)

    /// Watches the tier called `name`.
    init(name: String, logger: Logger) {
        self.name = name
        self.logger = logger
    }

    /// The tier answered.
    func succeeded() {
        guard down.withLock({ was in defer { was = false }; return was }) else { return }
        logger.notice("shared result storage is back", metadata: ["tier": "\(name)"])
    }

    /// The tier failed with `error`.
    func failed(_ error: HalcyonError) {
        guard !down.withLock({ was in defer { was = true }; return was }) else { return }
        logger.warning("shared result storage unavailable; serving from local caches and origins until it is back",
                       metadata: ["tier": "\(name)", "error": "\(error)"])
    }
}

import Foundation
import Halcyon
import Logging
import Tracing

/// Encoded results of http(s) sources below the in-memory ``ResponseCache``:
/// a local disk tier, then an optional shared tier (Redis) for a fleet.
///
/// Stores the response body as it was sent, with its content type and ETag,
/// so a hit costs one read and no decode or encode. A shared hit is copied
/// to the local disk. Writes go to both tiers in the background; one the
/// caller does not wait for is dropped when more than `maxPendingWrites` are
/// queued (the result is still served). A shared tier that fails is a miss:
/// the service goes on from its local caches and the origin, counts each
/// failure in `/metrics` (``ServerMetrics/storageError(tier:)``), and logs
/// once when the tier goes down and once when it is back (see ``TierHealth``).
final class ResultStorage: Sendable {
    /// The local disk tier.
    let local: DiskDataStorage
    /// The tier shared by the fleet, if configured.
    let shared: (any DataStorageTier)?
    private let sharedLifetime: Duration?
    private let pendingWrites = Locked(0)
    private let maxPendingWrites: Int
    private let metrics: ServerMetrics
    private let sharedHealth: TierHealth?

    /// Makes the storage; `sharedLifetime` is how long shared entries live (nil: until the store evicts them).
    init(
        local: DiskDataStorage, shared: (any DataStorageTier)?, sharedLifetime: Duration?, metrics: ServerMetrics,
        logger: Logger, maxPendingWrites: Int = 64
    ) {
        self.local = local
        self.shared = shared
        self.sharedLifetime = sharedLifetime
        self.metrics = metrics
        self.maxPendingWrites = maxPendingWrites
        sharedHealth = shared.map { TierHealth(name: $0.name, logger: logger) }
    }

    /// The stored response for `key` and the tier it came from, or nil.
    func value(for key: String) async -> (entry: ResponseCache.Entry, tier: String)? {
        let localSpan = startSpan("halcyon.cache.lookup", context: ServiceContext.current ?? .topLevel)
        localSpan.attributes["halcyon.cache.tier"] = local.name
        let found = try? await local.value(forKey: key)
        localSpan.attributes["halcyon.cache.hit"] = found != nil
        localSpan.end()
        if let found, let entry = Self.entry(found) {
            return (entry, local.name)
        }
        guard let shared, !Task.isCancelled else { return nil }
        let span = startSpan("halcyon.cache.lookup", context: ServiceContext.current ?? .topLevel, ofKind: .client)
        span.attributes["halcyon.cache.tier"] = shared.name
        defer { span.end() }
        do {
            let stored = try await shared.value(forKey: key)
            span.attributes["halcyon.cache.hit"] = stored != nil
            sharedHealth?.succeeded()
            guard let stored, let entry = Self.entry(stored) else { return nil }
            enqueue { [local] in try? await local.store(stored, forKey: key, lifetime: nil) }
            return (entry, shared.name)
        } catch {
            span.recordError(error)
            noteFailure(error, tier: shared.name)
            return nil
        }
    }

    /// Queues writes of `entry` under `key` to every tier; returns at once.
    func store(_ entry: ResponseCache.Entry, for key: String) {
        let stored = StoredData(data: entry.body, contentType: entry.contentType, etag: entry.etag, created: entry.created)
        enqueue { [local, shared, sharedLifetime] in
            try? await local.store(stored, forKey: key, lifetime: nil)
            guard let shared else { return }
            do throws(HalcyonError) {
                try await shared.store(stored, forKey: key, lifetime: sharedLifetime)
                self.sharedHealth?.succeeded()
            } catch {
                self.noteFailure(error, tier: shared.name)
            }
        }
    }

    // MARK: - Helpers

    private func noteFailure(_ error: HalcyonError, tier: String) {
        if case .requestError(.taskCancelled) = error { return }
        metrics.storageError(tier: tier)
        sharedHealth?.failed(error)
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

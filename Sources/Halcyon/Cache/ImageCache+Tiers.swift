import Foundation

// MARK: - Data tiers below the disk

/// The writes and removals of an ``ImageCache``'s data tiers, one after another in call order, so a removal
/// never overtakes the store before it. Each operation is a task that first awaits the one before it; nothing
/// blocks a thread. One lock guards the last task.
final class TierOperations: Sendable {
    private let last = Locked<Task<Void, Never>?>(nil)

    /// Runs `operation` after every operation enqueued before it; returns at once.
    func enqueue(_ operation: @escaping @Sendable () async -> Void) {
        last.withLock { last in
            let previous = last
            last = Task {
                await previous?.value
                await operation()
            }
        }
    }

    /// Waits until every operation enqueued so far has ended.
    func drain() async {
        await last.withLock { $0 }?.value
    }
}

extension ImageCache {
    /// Looks for the entry of `lookup` in the data tiers, in order, after the local disk missed.
    ///
    /// The first tier holding bytes that decode wins: the image goes into memory and the bytes onto the local
    /// disk, so the next read stays local. A tier that cannot be reached, or fails, is a miss; bytes that no longer
    /// decode are removed from that tier. Limit errors (too many pixels or frames) are thrown, as a disk hit's are.
    func tierLookup(_ lookup: CacheLookup) async throws(HalcyonError) -> CacheLookupResult {
        let key = lookup.diskComputedKey
        for tier in tiers {
            guard let stored = try? await tier.value(forKey: key), !stored.data.isEmpty else { continue }
            if Task.isCancelled { throw .requestError(reason: .taskCancelled(task: nil, token: nil)) }
            // Decoded as a disk entry is (its removal of undecodable bytes finds no local file here).
            let decoded = await readQueue.run {
                self.decodeStored(stored.data, computedKey: key, extensionKey: lookup.key, serializer: lookup.serializer,
                                  decoding: lookup.decoding, forcedExtension: lookup.forcedExtension)
            }
            guard let image = try decoded.get() else {
                tierOperations.enqueue { try? await tier.removeValue(forKey: key) }
                continue
            }
            memoryStorage.store(value: image, forKey: lookup.computedKey, expiration: lookup.memoryExpiration)
            ioQueue.async {
                try? self.diskStorage.store(value: stored.data, forKey: key, expiration: nil, metadata: nil,
                                            forcedExtension: lookup.forcedExtension, extensionKey: lookup.key, syncsWrites: nil)
            }
            return .hit(image, .disk)
        }
        return .miss
    }

    /// Copies bytes just written to the local disk into every data tier, in call order with the tiers' other
    /// operations; an expiration that is already past stores nothing.
    func storeInTiers(_ data: Data, computedKey: String, expiration: StorageExpiration?) {
        guard !tiers.isEmpty else { return }
        let lifetime: Duration?
        switch expiration ?? diskStorage.config.expiration {
        case .never: lifetime = nil
        case .expired: return
        case let other:
            let seconds = other.estimatedExpirationSince(Date()).timeIntervalSinceNow
            guard seconds > 0 else { return }
            lifetime = .milliseconds(Int64(min(seconds, 1e12) * 1000))
        }
        let value = StoredData(data: data)
        for tier in tiers {
            tierOperations.enqueue { try? await tier.store(value, forKey: computedKey, lifetime: lifetime) }
        }
    }

    /// Removes `computedKey` from every data tier, after the tiers' earlier operations.
    func removeFromTiers(_ computedKey: String) {
        for tier in tiers {
            tierOperations.enqueue { try? await tier.removeValue(forKey: computedKey) }
        }
    }

    /// Waits until every write and removal handed to the data tiers so far has ended.
    ///
    /// Stores and removals reach the tiers after the call that made them returns (a shared tier is a network
    /// away); call this before reading a tier directly, or before a process exits.
    public func waitForTierWrites() async {
        await tierOperations.drain()
    }
}

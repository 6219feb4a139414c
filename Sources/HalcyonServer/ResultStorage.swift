import Foundation
import Halcyon

/// Encoded results of http(s) sources on disk, under the response key: the
/// tier below the in-memory ``ResponseCache``.
///
/// Stores the response body as it was sent, with its content type and ETag
/// in the entry's metadata, so a hit costs one file read and no decode or
/// encode. Writes are atomic (temp file + rename) and not fsynced: an entry
/// lost to a crash is recomputed, and a torn one fails its checksum and reads
/// as a miss. Reads and writes run on a bounded queue, never on the caller's
/// thread; a write the caller does not wait for is dropped when more than
/// `maxPendingWrites` are queued (the result is still served).
final class ResultStorage: Sendable {
    private let disk: DiskStorage.Backend
    private let queue: WorkQueue
    private let pendingWrites = Locked(0)
    private let maxPendingWrites: Int

    /// Makes the storage in `folder/halcyon-results`, at most `megabytes` MiB (0: unlimited).
    init(folder: URL, megabytes: Int, maxPendingWrites: Int = 64) throws(HalcyonError) {
        var config = DiskStorage.Config(
            name: "halcyon-results", sizeLimit: UInt(max(0, megabytes)) * 1024 * 1024, directory: folder)
        config.syncsWrites = false
        disk = try DiskStorage.Backend(config: config)
        queue = WorkQueue(name: "halcyon.results", width: 2)
        self.maxPendingWrites = maxPendingWrites
    }

    /// The stored response for `key`, or nil (missing, expired, corrupt or unreadable).
    func value(for key: String) async -> ResponseCache.Entry? {
        await withCheckedContinuation { (continuation: CheckedContinuation<ResponseCache.Entry?, Never>) in
            queue.execute { [disk] in
                guard let entry = try? disk.entry(forKey: key, extendingExpiration: .none),
                      let contentType = entry.metadata.contentType, let etag = entry.metadata.etag else {
                    continuation.resume(returning: nil)
                    return
                }
                continuation.resume(returning: ResponseCache.Entry(
                    body: entry.data, contentType: contentType, etag: etag, created: entry.storedDate))
            }
        }
    }

    /// Queues a write of `entry` under `key`; returns at once.
    func store(_ entry: ResponseCache.Entry, for key: String) {
        let admitted = pendingWrites.withLock { pending -> Bool in
            guard pending < maxPendingWrites else { return false }
            pending += 1
            return true
        }
        guard admitted else { return }
        queue.execute { [disk, pendingWrites] in
            var metadata = CacheEntryMetadata()
            metadata.contentType = entry.contentType
            metadata.etag = entry.etag
            try? disk.store(value: entry.body, forKey: key, metadata: metadata)
            pendingWrites.withLock { $0 -= 1 }
        }
    }
}

import Foundation

/// A ``DataStorageTier`` in a local folder, on ``DiskStorage``: crash-safe
/// entries (temp file + rename, checksummed), size limit, expiration.
///
/// Every call runs on its own bounded ``WorkQueue``, never on the caller's
/// thread. A call whose task is cancelled before its turn does nothing and
/// throws `.requestError(.taskCancelled)`; once a write has started it
/// completes (it is atomic either way). The content type and ETag travel in
/// the entry's metadata; `created` reads back as the time of the write.
public final class DiskDataStorage: DataStorageTier {
    /// `disk`.
    public let name = "disk"
    /// The storage the entries live in.
    public let backend: DiskStorage.Backend
    private let queue: WorkQueue

    /// Makes the tier over `backend`, running at most `width` file operations at once.
    public init(backend: DiskStorage.Backend, width: Int = 2) {
        self.backend = backend
        queue = WorkQueue(name: "halcyon.data-storage", width: width)
    }

    /// Makes the tier in `folder/name`, at most `megabytes` MiB (0: unlimited), writes not fsynced.
    public convenience init(name: String, folder: URL, megabytes: Int) throws(HalcyonError) {
        var config = DiskStorage.Config(name: name, sizeLimit: UInt(max(0, megabytes)) * 1024 * 1024, directory: folder)
        config.syncsWrites = false
        self.init(backend: try DiskStorage.Backend(config: config))
    }

    /// The stored value, or nil (missing, expired, corrupt, unreadable).
    public func value(forKey key: String) async throws(HalcyonError) -> StoredData? {
        try await run { backend in
            guard let entry = try? backend.entry(forKey: key, extendingExpiration: .none) else { return nil }
            return StoredData(data: entry.data, contentType: entry.metadata.contentType, etag: entry.metadata.etag,
                              created: entry.storedDate)
        }
    }

    /// Stores `value` atomically; `lifetime` nil uses the backend's configured expiration.
    public func store(_ value: StoredData, forKey key: String, lifetime: Duration?) async throws(HalcyonError) {
        try await run { backend throws(HalcyonError) in
            var metadata = CacheEntryMetadata()
            metadata.contentType = value.contentType
            metadata.etag = value.etag
            let expiration = lifetime.map { StorageExpiration.seconds(Double($0.components.seconds)
                + Double($0.components.attoseconds) / 1e18) }
            try backend.store(value: value.data, forKey: key, expiration: expiration, metadata: metadata)
        }
    }

    /// Removes the entry under `key`.
    public func removeValue(forKey key: String) async throws(HalcyonError) {
        try await run { backend throws(HalcyonError) in try backend.remove(forKey: key) }
    }

    /// Whether an unexpired entry exists under `key`.
    public func containsValue(forKey key: String) async throws(HalcyonError) -> Bool {
        try await run { backend in backend.isCached(forKey: key) }
    }

    /// Runs `body` on the queue, unless the task is cancelled before its turn.
    private func run<T: Sendable>(_ body: @escaping @Sendable (DiskStorage.Backend) throws(HalcyonError) -> T) async throws(HalcyonError) -> T {
        let cancelled = Locked(false)
        let result: Result<T, HalcyonError> = await withTaskCancellationHandler {
            await withCheckedContinuation { continuation in
                queue.execute { [backend] in
                    if cancelled.withLock({ $0 }) {
                        continuation.resume(returning: .failure(.requestError(reason: .taskCancelled(task: nil, token: nil))))
                        return
                    }
                    do throws(HalcyonError) {
                        continuation.resume(returning: .success(try body(backend)))
                    } catch {
                        continuation.resume(returning: .failure(error))
                    }
                }
            }
        } onCancel: {
            cancelled.withLock { $0 = true }
        }
        return try result.get()
    }
}

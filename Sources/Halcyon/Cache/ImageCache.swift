import Dispatch
import Foundation

/// A two-layer image cache: decoded images in memory, encoded bytes on disk.
///
/// Kingfisher's `ImageCache` shape. Images are stored under `key`, or
/// `key@processorIdentifier` when a non-default processor made them or they
/// hold only the first frame (see ``processorIdentifier(for:)``), so one
/// source can be cached once per processing and frame choice. A memory hit is answered on the
/// caller's thread; everything that touches the disk runs on the cache's own
/// queues, never on the caller's thread unless `loadDiskFileSynchronously`
/// asks for it: serializing, writes and removals on one serial queue, in call
/// order; reads and decoding on a concurrent one. A disk hit
/// is decoded with the options' ``CacheSerializer`` and put into memory.
///
/// Every API comes as async/await and as a completion handler called on
/// `callbackQueue` (`nil`: on whichever thread finished the work).
/// Thread-safe: the two storages are thread-safe and this class holds no other
/// mutable state.
public final class ImageCache: Sendable {
    /// The shared cache named `"default"`, in `$XDG_CACHE_HOME/halcyon/default` (or `~/.cache/halcyon/default`).
    public static let `default` = ImageCache(name: "default")

    /// The memory layer.
    public let memoryStorage: MemoryStorage.Backend<Image>
    /// The disk layer.
    public let diskStorage: DiskStorage.Backend
    /// Data tiers below the disk, in lookup order (a fleet's shared store, an object store): empty by default.
    ///
    /// A lookup that misses memory and disk asks them in order; a hit is decoded, put in memory and copied to
    /// the local disk. Every entry written to the disk is copied to each tier, and removals reach them too, in
    /// call order, after the call returns (``waitForTierWrites()``). A tier that fails is a miss, never an error.
    /// ``clearDiskCache()`` and expiry cleaning touch the local disk only: a shared tier keeps its own lifetimes.
    public let tiers: [any DataStorageTier]
    /// The tiers' writes and removals, in call order.
    let tierOperations = TierOperations()

    /// Serial: every disk write and removal, in call order, so a remove never overtakes the store before it.
    let ioQueue: DispatchQueue
    /// Disk reads and decoding, at most twice the core count at once.
    let readQueue: WorkQueue
    /// Test hook: called on the read queue with the computed key before each disk read of an image.
    let diskReadWillStart = Locked<(@Sendable (String) -> Void)?>(nil)

    // MARK: - Making caches

    /// Makes a cache from two storages.
    public convenience init(memoryStorage: MemoryStorage.Backend<Image>, diskStorage: DiskStorage.Backend) {
        self.init(memoryStorage: memoryStorage, diskStorage: diskStorage, tiers: [])
    }

    /// Makes a cache from two storages and the data ``tiers`` below the disk, asked in the order given.
    public init(memoryStorage: MemoryStorage.Backend<Image>, diskStorage: DiskStorage.Backend, tiers: [any DataStorageTier]) {
        self.memoryStorage = memoryStorage
        self.diskStorage = diskStorage
        self.tiers = tiers
        self.ioQueue = DispatchQueue(label: "halcyon.imagecache.io.\(diskStorage.config.name)", qos: .userInitiated)
        self.readQueue = WorkQueue(name: "halcyon.imagecache.read.\(diskStorage.config.name)", width: 2 * WorkQueue.defaultWidth)
    }

    /// Makes a cache with default limits whose disk directory is named after `name`.
    ///
    /// Never fails: a name that is not a valid file name (empty, or with `/`)
    /// is escaped or hashed into one. The directory is created on first store.
    public convenience init(name: String) {
        let safeName = DiskStorage.Backend.escapedFileName(name) ?? DiskStorage.Backend.sha256Hex(name)
        self.init(
            memoryStorage: MemoryStorage.Backend(config: MemoryStorage.Config()),
            diskStorage: DiskStorage.Backend(validatedConfig: DiskStorage.Config(name: safeName), clock: .system))
    }

    /// Makes a cache whose disk directory is `directory/name`.
    ///
    /// Throws `.cacheError(.invalidConfiguration)` for a name that is not a file name.
    public convenience init(name: String, cacheDirectoryURL directory: URL?) throws(HalcyonError) {
        try self.init(name: name, cacheDirectoryURL: directory, diskCachePathClosure: nil)
    }

    /// Makes a cache whose disk directory is `diskCachePathClosure(directory, name)` (Kingfisher's initializer);
    /// a nil closure gives `directory/name`, a nil directory the default parent.
    ///
    /// Throws `.cacheError(.invalidConfiguration)` for a name that is not a file name.
    public convenience init(
        name: String, cacheDirectoryURL directory: URL?, diskCachePathClosure: (@Sendable (_ directory: URL, _ cacheName: String) -> URL)?
    ) throws(HalcyonError) {
        var config = DiskStorage.Config(name: name, directory: directory)
        config.cachePathBlock = diskCachePathClosure
        let disk = try DiskStorage.Backend(config: config)
        self.init(memoryStorage: MemoryStorage.Backend(config: MemoryStorage.Config()), diskStorage: disk)
    }

    // MARK: - Storing

    /// Stores `image` in memory and, with `toDisk`, its serialized bytes on disk.
    ///
    /// The memory store happens before this returns. Serializing and the disk
    /// write run on the cache's queue; `completionHandler` then gets the result
    /// on `callbackQueue`. `original` is the data the image came from, which the
    /// serializer may store as is, except under a processed key when the image
    /// is not what those bytes decode to. `metadata` (ETag, Last-Modified...) is kept
    /// with the disk entry for revalidation.
    public func store(
        _ image: Image,
        original: Data? = nil,
        forKey key: String,
        processorIdentifier identifier: String = "",
        forcedExtension: String? = nil,
        cacheSerializer serializer: any CacheSerializer = DefaultCacheSerializer.default,
        toDisk: Bool = true,
        memoryExpiration: StorageExpiration? = nil,
        diskExpiration: StorageExpiration? = nil,
        metadata: CacheEntryMetadata? = nil,
        syncsWrites: Bool? = nil,
        callbackQueue: DispatchQueue? = nil,
        completionHandler: (@Sendable (CacheStoreResult) -> Void)? = nil
    ) {
        let computed = Self.computedKey(key, processorIdentifier: identifier)
        memoryStorage.store(value: image, forKey: computed, expiration: memoryExpiration)
        guard toDisk else {
            if let completionHandler {
                Self.deliver(CacheStoreResult(memoryCacheResult: .success(()), diskCacheResult: .success(())),
                             on: callbackQueue, completionHandler)
            }
            return
        }
        ioQueue.async {
            let result = self.serializeAndWrite(image, original: original, computedKey: computed, extensionKey: key,
                                                isProcessed: !identifier.isEmpty, serializer: serializer,
                                                expiration: diskExpiration, metadata: metadata,
                                                forcedExtension: forcedExtension, syncsWrites: syncsWrites)
            if let completionHandler {
                Self.deliver(CacheStoreResult(memoryCacheResult: .success(()), diskCacheResult: result),
                             on: callbackQueue, completionHandler)
            }
        }
    }

    /// Stores `image` in memory and, with `toDisk`, on disk; returns when both are done.
    ///
    /// Throws the disk failure: `.cacheError(.cannotSerializeImage)`,
    /// `.cannotCreateDirectory` or `.cannotWriteFile`. The memory store has
    /// happened even then.
    public func store(
        _ image: Image,
        original: Data? = nil,
        forKey key: String,
        processorIdentifier identifier: String = "",
        forcedExtension: String? = nil,
        cacheSerializer serializer: any CacheSerializer = DefaultCacheSerializer.default,
        toDisk: Bool = true,
        memoryExpiration: StorageExpiration? = nil,
        diskExpiration: StorageExpiration? = nil,
        metadata: CacheEntryMetadata? = nil,
        syncsWrites: Bool? = nil
    ) async throws(HalcyonError) {
        let result = await awaitDelivery { deliver in
            store(image, original: original, forKey: key, processorIdentifier: identifier, forcedExtension: forcedExtension,
                  cacheSerializer: serializer, toDisk: toDisk, memoryExpiration: memoryExpiration, diskExpiration: diskExpiration,
                  metadata: metadata, syncsWrites: syncsWrites, callbackQueue: nil) { deliver($0) }
        }
        try result.diskCacheResult.get()
    }

    /// Stores already-encoded bytes on disk only, with optional HTTP metadata.
    ///
    /// For originals kept for later processing, and for downloads stored as
    /// received. Runs on the cache's queue.
    public func storeToDisk(
        _ data: Data,
        forKey key: String,
        processorIdentifier identifier: String = "",
        forcedExtension: String? = nil,
        expiration: StorageExpiration? = nil,
        metadata: CacheEntryMetadata? = nil,
        syncsWrites: Bool? = nil,
        callbackQueue: DispatchQueue? = nil,
        completionHandler: (@Sendable (CacheStoreResult) -> Void)? = nil
    ) {
        let computed = Self.computedKey(key, processorIdentifier: identifier)
        ioQueue.async {
            let result: Result<Void, HalcyonError>
            do throws(HalcyonError) {
                try self.diskStorage.store(value: data, forKey: computed, expiration: expiration, metadata: metadata,
                                           forcedExtension: forcedExtension, extensionKey: key, syncsWrites: syncsWrites)
                result = .success(())
            } catch {
                result = .failure(error)
            }
            if let completionHandler {
                Self.deliver(CacheStoreResult(memoryCacheResult: .success(()), diskCacheResult: result),
                             on: callbackQueue, completionHandler)
            }
        }
    }

    /// Stores already-encoded bytes on disk only; returns when written.
    ///
    /// Throws `.cacheError(.cannotCreateDirectory)` or `.cannotWriteFile`.
    public func storeToDisk(
        _ data: Data,
        forKey key: String,
        processorIdentifier identifier: String = "",
        forcedExtension: String? = nil,
        expiration: StorageExpiration? = nil,
        metadata: CacheEntryMetadata? = nil,
        syncsWrites: Bool? = nil
    ) async throws(HalcyonError) {
        let result = await awaitDelivery { deliver in
            storeToDisk(data, forKey: key, processorIdentifier: identifier, forcedExtension: forcedExtension,
                        expiration: expiration, metadata: metadata, syncsWrites: syncsWrites,
                        callbackQueue: nil) { deliver($0) }
        }
        try result.diskCacheResult.get()
    }

    /// Serializes `image` and writes it under `computedKey`; the file's automatic extension comes from `extensionKey` (the source key).
    func serializeAndWrite(
        _ image: Image, original: Data?, computedKey: String, extensionKey: String, isProcessed: Bool, serializer: any CacheSerializer,
        expiration: StorageExpiration?, metadata: CacheEntryMetadata?,
        forcedExtension: String?, syncsWrites: Bool?
    ) -> Result<Void, HalcyonError> {
        // A processed key's entry from a serializer that keeps original data must be the source's bytes, which a
        // disk hit processes again (Kingfisher's rule); a processed image without them stays in memory only.
        if isProcessed, serializer.originalDataUsed, original == nil { return .success(()) }
        let data: Data
        do throws(HalcyonError) {
            data = try Self.serialized(image, original: original, isProcessed: isProcessed, serializer: serializer)
        } catch {
            return .failure(.cacheError(reason: .cannotSerializeImage(key: computedKey, message: "\(error)")))
        }
        guard !data.isEmpty else {
            return .failure(.cacheError(reason: .cannotSerializeImage(key: computedKey, message: "the serializer returned no bytes")))
        }
        do throws(HalcyonError) {
            try diskStorage.store(value: data, forKey: computedKey, expiration: expiration, metadata: metadata,
                                  forcedExtension: forcedExtension, extensionKey: extensionKey, syncsWrites: syncsWrites)
            storeInTiers(data, computedKey: computedKey, expiration: expiration)
            return .success(())
        } catch {
            return .failure(error)
        }
    }

    /// The bytes `serializer` gives for `image`; the original's bytes under a processed key only when they decode
    /// to `image` or the serializer keeps original data.
    ///
    /// A serializer that keeps the original data (``CacheSerializer/originalDataUsed``, such as
    /// ``DefaultCacheSerializer/preferCacheOriginalData``) puts the unprocessed source under
    /// `key@processorIdentifier`, as in Kingfisher, and a disk hit there runs the processor again
    /// (``ImageCache/reprocessed(_:underProcessedKey:serializer:decoding:)``). Any other serializer that
    /// returns the original's bytes for a processed image is asked again with no original, so a disk hit is
    /// what the processor made.
    private static func serialized(
        _ image: Image, original: Data?, isProcessed: Bool, serializer: any CacheSerializer
    ) throws(HalcyonError) -> Data {
        let data = try serializer.data(with: image, original: original)
        guard isProcessed, !serializer.originalDataUsed, let original, data == original,
              image.sourceFingerprint?.identifies(original) != true else {
            return data
        }
        return try serializer.data(with: image, original: nil)
    }

    // MARK: - Disk entries and revalidation

    /// The disk entry for `key` with its HTTP metadata and dates, read on the cache's queue.
    ///
    /// With `includingExpired` an expired entry is returned too, so its ETag
    /// and Last-Modified can be sent in a conditional request. Does not extend
    /// the expiration.
    public func diskEntry(
        forKey key: String,
        processorIdentifier identifier: String = "",
        forcedExtension: String? = nil,
        includingExpired: Bool = false
    ) async throws(HalcyonError) -> DiskStorage.Entry? {
        let computed = Self.computedKey(key, processorIdentifier: identifier)
        let result = await readQueue.run { () -> Result<DiskStorage.Entry?, HalcyonError> in
            do throws(HalcyonError) {
                return .success(try self.diskStorage.entry(forKey: computed, forcedExtension: forcedExtension,
                                                           extensionKey: key, includingExpired: includingExpired,
                                                           extendingExpiration: ExpirationExtending.none))
            } catch {
                return .failure(error)
            }
        }
        return try result.get()
    }

    /// Gives the disk entry for `key` a new expiration from now without rewriting it (after an HTTP 304).
    ///
    /// `expiration` defaults to the disk storage's. Returns `false` when there is no valid entry.
    @discardableResult
    public func extendDiskExpiration(
        forKey key: String,
        processorIdentifier identifier: String = "",
        forcedExtension: String? = nil,
        to expiration: StorageExpiration? = nil
    ) async throws(HalcyonError) -> Bool {
        let computed = Self.computedKey(key, processorIdentifier: identifier)
        let result = await onQueue(ioQueue) { () -> Result<Bool, HalcyonError> in
            do throws(HalcyonError) {
                return .success(try self.diskStorage.extendExpiration(forKey: computed, forcedExtension: forcedExtension,
                                                                      extensionKey: key, to: expiration))
            } catch {
                return .failure(error)
            }
        }
        return try result.get()
    }

    // MARK: - Inspecting

    /// Where the image for `key` and `processorIdentifier` is cached, checking memory then the disk entry's header.
    ///
    /// The disk check reads one small header on the caller's thread. Synchronous, as in Kingfisher, in `async`
    /// code too; ``imageCachedTypeAsync(forKey:processorIdentifier:forcedExtension:)`` checks the disk on the
    /// cache's queue instead.
    public func imageCachedType(forKey key: String, processorIdentifier identifier: String = "", forcedExtension: String? = nil) -> CacheType {
        let computed = Self.computedKey(key, processorIdentifier: identifier)
        if memoryStorage.isCached(forKey: computed) { return .memory }
        if diskStorage.isCached(forKey: computed, forcedExtension: forcedExtension, extensionKey: key) { return .disk }
        return .none
    }

    /// Whether the image for `key` and `processorIdentifier` is in memory or on disk (with `forcedExtension`, if
    /// it was stored with one).
    public func isCached(forKey key: String, processorIdentifier identifier: String = "", forcedExtension: String? = nil) -> Bool {
        imageCachedType(forKey: key, processorIdentifier: identifier, forcedExtension: forcedExtension).cached
    }

    /// The path of the disk file for `key` and `processorIdentifier`, whether or not it exists.
    ///
    /// `forcedExtension` is the one the entry was stored with (`.forcedCacheFileExtension`), if any.
    public func cachePath(forKey key: String, processorIdentifier identifier: String = "", forcedExtension: String? = nil) -> String {
        diskStorage.cacheFileURL(
            forKey: Self.computedKey(key, processorIdentifier: identifier), forcedExtension: forcedExtension, extensionKey: key).path
    }

    /// The disk file name for `key` and `processorIdentifier` (Kingfisher's `hash(forKey:)`): the
    /// SHA-256 hex of the computed key, plus the extension the disk storage's settings give it.
    public func hash(forKey key: String, processorIdentifier identifier: String = "", forcedExtension: String? = nil) -> String {
        diskStorage.cacheFileName(
            forKey: Self.computedKey(key, processorIdentifier: identifier), forcedExtension: forcedExtension, extensionKey: key)
    }

    /// The bytes taken by the disk cache, counted on the cache's queue.
    public var diskStorageSize: UInt {
        get async { await onQueue(ioQueue) { self.diskStorage.totalSize() } }
    }

    /// The bytes taken by the disk cache, counted on the cache's queue and given to `completion`.
    public func calculateDiskStorageSize(
        callbackQueue: DispatchQueue? = nil,
        completion: @escaping @Sendable (Result<UInt, HalcyonError>) -> Void
    ) {
        ioQueue.async { Self.deliver(.success(self.diskStorage.totalSize()), on: callbackQueue, completion) }
    }

    // MARK: - Removing

    /// Removes the image for `key` and `processorIdentifier` from memory and/or disk.
    ///
    /// The memory removal happens before this returns; the disk one on the cache's queue.
    public func removeImage(
        forKey key: String,
        processorIdentifier identifier: String = "",
        forcedExtension: String? = nil,
        fromMemory: Bool = true,
        fromDisk: Bool = true,
        callbackQueue: DispatchQueue? = nil,
        completionHandler: (@Sendable (Result<Void, HalcyonError>) -> Void)? = nil
    ) {
        let computed = Self.computedKey(key, processorIdentifier: identifier)
        if fromMemory { memoryStorage.remove(forKey: computed) }
        if fromDisk { removeFromTiers(computed) }
        guard fromDisk else {
            if let completionHandler { Self.deliver(.success(()), on: callbackQueue, completionHandler) }
            return
        }
        ioQueue.async {
            let result: Result<Void, HalcyonError>
            do throws(HalcyonError) {
                try self.diskStorage.remove(forKey: computed, forcedExtension: forcedExtension, extensionKey: key)
                result = .success(())
            } catch {
                result = .failure(error)
            }
            if let completionHandler { Self.deliver(result, on: callbackQueue, completionHandler) }
        }
    }

    /// Removes the image for `key` and `processorIdentifier`; async form.
    ///
    /// Throws `.cacheError(.cannotRemoveFile)` when the disk file cannot be deleted.
    public func removeImage(
        forKey key: String,
        processorIdentifier identifier: String = "",
        forcedExtension: String? = nil,
        fromMemory: Bool = true,
        fromDisk: Bool = true
    ) async throws(HalcyonError) {
        let result = await awaitDelivery { deliver in
            removeImage(forKey: key, processorIdentifier: identifier, forcedExtension: forcedExtension,
                        fromMemory: fromMemory, fromDisk: fromDisk) {
                deliver($0)
            }
        }
        try result.get()
    }

    /// Removes every image from memory, at once.
    public func clearMemoryCache() {
        memoryStorage.removeAll()
    }

    /// Removes every file of the disk cache, on the cache's queue.
    public func clearDiskCache(callbackQueue: DispatchQueue? = nil, completion: (@Sendable (Result<Void, HalcyonError>) -> Void)? = nil) {
        ioQueue.async {
            let result: Result<Void, HalcyonError>
            do throws(HalcyonError) {
                try self.diskStorage.removeAll()
                result = .success(())
            } catch {
                result = .failure(error)
            }
            if let completion { Self.deliver(result, on: callbackQueue, completion) }
        }
    }

    /// Removes every file of the disk cache; async form.
    ///
    /// Throws `.cacheError(.cannotRemoveFile)` for a file that cannot be deleted.
    public func clearDiskCache() async throws(HalcyonError) {
        let result = await awaitDelivery { deliver in
            clearDiskCache(callbackQueue: nil) { deliver($0) }
        }
        try result.get()
    }

    /// Removes expired images from memory, at once.
    public func cleanExpiredMemoryCache() {
        memoryStorage.removeExpired()
    }

    /// Removes expired and corrupt disk entries on the cache's queue; `completion` gets the removed files.
    public func cleanExpiredDiskCache(callbackQueue: DispatchQueue? = nil, completion: (@Sendable ([URL]) -> Void)? = nil) {
        ioQueue.async {
            let removed = self.diskStorage.removeExpiredValues()
            self.announceCleaned(removed)
            if let completion { Self.deliver(removed, on: callbackQueue, completion) }
        }
    }

    /// Removes expired and corrupt disk entries; returns the removed files.
    @discardableResult
    public func cleanExpiredDiskCache() async -> [URL] {
        await onQueue(ioQueue) {
            let removed = self.diskStorage.removeExpiredValues()
            self.announceCleaned(removed)
            return removed
        }
    }

    /// Posts ``Foundation/Notification/Name/HalcyonDidCleanDiskCache`` when files were removed.
    private func announceCleaned(_ removed: [URL]) {
        guard !removed.isEmpty else { return }
        NotificationCenter.default.post(
            name: .HalcyonDidCleanDiskCache, object: self, userInfo: [HalcyonDiskCacheCleanedHashKey: removed.map(\.lastPathComponent)])
    }

    // MARK: - Queues

    private func onQueue<T: Sendable>(_ queue: DispatchQueue, _ work: @escaping @Sendable () -> T) async -> T {
        await awaitDelivery { deliver in
            queue.async { deliver(work()) }
        }
    }

    static func deliver<T: Sendable>(_ value: T, on queue: DispatchQueue?, _ handler: @escaping @Sendable (T) -> Void) {
        if let queue {
            queue.async { handler(value) }
        } else {
            handler(value)
        }
    }
}

import Foundation

// MARK: - One lookup per attempt

/// What the retrieve pipeline asks of the cache on one attempt.
struct CacheLookup: Sendable {
    /// The source's cache key.
    var key: String
    /// The processor-and-frame part of the key (``ImageCache/processorIdentifier(for:)``).
    var processorIdentifier: String
    /// The decoding fields given to the serializer.
    var decoding: HalcyonParsedOptionsInfo
    var serializer: any CacheSerializer
    var forcedExtension: String?
    var memoryExpiration: StorageExpiration?
    var memoryExtending: ExpirationExtending
    var diskExtending: ExpirationExtending
    /// Look in memory (false when the caller just did).
    var readsMemory: Bool
    /// Use a fresh disk entry (false for `.fromMemoryCacheOrRefresh`, which still revalidates a stale one).
    var readsDisk: Bool
    /// An expired entry with validators comes back as ``CacheLookupResult/stale(_:)`` (network sources).
    var revalidates: Bool
    /// Every entry with validators comes back stale, fresh or not (`.refreshCached`).
    var forcesRevalidation: Bool

    /// The memory key.
    var computedKey: String { ImageCache.computedKey(key, processorIdentifier: processorIdentifier) }
    /// The disk key: without the frame choice of an unprocessed read (``ImageCache/diskProcessorIdentifier(for:)``
    /// of ``decoding``, which holds the same processor, frame choice and scale as ``processorIdentifier``).
    var diskComputedKey: String {
        ImageCache.computedKey(key, processorIdentifier: ImageCache.diskProcessorIdentifier(for: decoding))
    }
}

/// A disk entry that needs the server's word before it is used again.
struct StaleCacheEntry: Sendable {
    /// The stored bytes, decoded if the server answers 304.
    let data: Data
    /// What to send in the conditional request.
    let validators: CacheValidators
}

/// What one lookup found.
enum CacheLookupResult: Sendable {
    /// A usable image: from memory, or decoded from disk and now in memory too.
    case hit(Image, CacheType)
    /// An entry to revalidate with the server.
    case stale(StaleCacheEntry)
    /// Nothing usable.
    case miss
}

extension ImageCache {
    /// Answers fresh, stale-with-validators or miss from one memory read and at most one disk open, then the
    /// data ``tiers`` in order when the disk has nothing.
    ///
    /// The disk read and decode run on the cache's read queue. A fresh disk
    /// hit is put into memory unless the calling task was cancelled meanwhile
    /// (then it throws `requestError(.taskCancelled)` and stores nothing).
    /// Bytes that no longer decode are removed and are a miss; bytes over the
    /// decoding limits throw that processor error. Disk I/O failures throw
    /// `.cacheError(.cannotReadFile)`.
    func lookup(_ lookup: CacheLookup) async throws(HalcyonError) -> CacheLookupResult {
        let computed = lookup.computedKey
        if lookup.readsMemory, !lookup.forcesRevalidation,
           let image = memoryStorage.value(forKey: computed, extendingExpiration: lookup.memoryExtending) {
            return .hit(image, .memory)
        }
        guard lookup.readsDisk || lookup.revalidates else { return .miss }
        let cancelled = Locked(false)
        let result = await withTaskCancellationHandler {
            await readQueue.run { self.diskLookup(lookup, isCancelled: { cancelled.withLock { $0 } }) }
        } onCancel: {
            cancelled.withLock { $0 = true }
        }
        let found = try result.get()
        guard case .miss = found, !tiers.isEmpty, lookup.readsDisk, !lookup.forcesRevalidation else { return found }
        return try await tierLookup(lookup)
    }

    func diskLookup(_ lookup: CacheLookup, isCancelled: () -> Bool) -> Result<CacheLookupResult, HalcyonError> {
        let cancellation = HalcyonError.requestError(reason: .taskCancelled(task: nil, token: nil))
        let computed = lookup.diskComputedKey
        diskReadWillStart.withLock { $0 }?(computed)
        if isCancelled() { return .failure(cancellation) }
        let entry: (data: Data, metadata: CacheEntryMetadata, expirationDate: Date)
        do throws(HalcyonError) {
            guard let found = try diskStorage.lookupEntry(
                forKey: computed, forcedExtension: lookup.forcedExtension, extensionKey: lookup.key,
                includingExpired: lookup.revalidates, extendingExpiration: lookup.diskExtending) else { return .success(.miss) }
            entry = found
        } catch {
            return .failure(error)
        }
        let expired = entry.expirationDate <= diskStorage.clock.now()
        let validators = CacheValidators(etag: entry.metadata.etag, lastModified: entry.metadata.lastModified)
        if let validators, lookup.revalidates, lookup.forcesRevalidation || expired {
            return .success(.stale(StaleCacheEntry(data: entry.data, validators: validators)))
        }
        guard lookup.readsDisk, !lookup.forcesRevalidation, !expired else { return .success(.miss) }
        switch decodeStored(entry.data, computedKey: computed, extensionKey: lookup.key, serializer: lookup.serializer,
                            decoding: lookup.decoding, forcedExtension: lookup.forcedExtension) {
        case .failure(let error):
            return .failure(error)
        case .success(nil):
            return .success(.miss)
        case .success(let image?):
            if isCancelled() { return .failure(cancellation) }
            memoryStorage.store(value: image, forKey: lookup.computedKey, expiration: lookup.memoryExpiration)
            return .success(.hit(image, .disk))
        }
    }

    /// Decodes stored bytes; bytes that no longer decode are removed (nil), limit errors are thrown.
    ///
    /// `extensionKey` is the source key the entry's file extension comes from (see ``DiskStorage/Backend/cacheFileName(forKey:forcedExtension:extensionKey:)``).
    func decodeStored(
        _ data: Data, computedKey: String, extensionKey: String, serializer: any CacheSerializer,
        decoding: HalcyonParsedOptionsInfo, forcedExtension: String?
    ) -> Result<Image?, HalcyonError> {
        let image: Image
        do throws(HalcyonError) {
            image = try serializer.image(with: data, options: decoding)
        } catch {
            if case .processorError(reason: .tooManyPixels) = error { return .failure(error) }
            if case .processorError(reason: .tooManyFrames) = error { return .failure(error) }
            try? diskStorage.remove(forKey: computedKey, forcedExtension: forcedExtension, extensionKey: extensionKey)
            return .success(nil)
        }
        do throws(HalcyonError) {
            return .success(try Self.reprocessed(
                image, underProcessedKey: computedKey != extensionKey, serializer: serializer, decoding: decoding))
        } catch {
            return .failure(error)
        }
    }

    /// The image an entry stands for: with a serializer that keeps the original data
    /// (``CacheSerializer/originalDataUsed``), an entry under a processed key holds the source's bytes, so
    /// `decoding.processor` runs on the decoded image again, as in Kingfisher; otherwise `image` itself.
    ///
    /// The processed result is what goes into memory, so a memory hit is not processed twice.
    static func reprocessed(
        _ image: Image, underProcessedKey: Bool, serializer: any CacheSerializer, decoding: HalcyonParsedOptionsInfo
    ) throws(HalcyonError) -> Image {
        let processor = decoding.processor
        guard underProcessedKey, serializer.originalDataUsed, !processor.identifier.isEmpty else { return image }
        return try processor.processAttributingFailure(item: .image(image), options: decoding)
    }

    /// Puts an image decoded from a revalidated entry into memory, under the lookup's key and memory expiration.
    func storeRevalidated(_ image: Image, lookup: CacheLookup) {
        memoryStorage.store(value: image, forKey: lookup.computedKey, expiration: lookup.memoryExpiration)
    }

    // MARK: - Storing under a policy

    /// Stores `image` under `key` and `identifier` as `policy` says; waits for the disk only when it asks.
    ///
    /// The memory store happens at once; the disk write runs on the cache's
    /// write queue, in call order with the other writes. With
    /// ``CacheWritePolicy/waitsForDisk`` this returns after the write and
    /// throws its failure. ``CacheWritePolicy/storesOriginal`` is for the
    /// caller, which may keep originals in another cache (``storeOriginal(_:forKey:policy:metadata:)``).
    public func store(
        _ image: Image, original: Data?, forKey key: String, processorIdentifier identifier: String,
        policy: CacheWritePolicy, metadata: CacheEntryMetadata?
    ) async throws(HalcyonError) {
        try await store(image, original: original, forKey: key, memoryIdentifier: identifier, diskIdentifier: identifier,
                        policy: policy, metadata: metadata)
    }

    /// ``store(_:original:forKey:processorIdentifier:policy:metadata:)`` with the memory and disk keys made of
    /// different identifiers (the retrieve pipeline's ``diskProcessorIdentifier(for:)``, whose entry may be shared).
    func store(
        _ image: Image, original: Data?, forKey key: String, memoryIdentifier: String, diskIdentifier: String,
        policy: CacheWritePolicy, metadata: CacheEntryMetadata?
    ) async throws(HalcyonError) {
        memoryStorage.store(value: image, forKey: Self.computedKey(key, processorIdentifier: memoryIdentifier),
                            expiration: policy.memoryExpiration)
        guard policy.toDisk else { return }
        let computed = Self.computedKey(key, processorIdentifier: diskIdentifier)
        let write: @Sendable () -> Result<Void, HalcyonError> = {
            self.serializeAndWrite(
                image, original: original, computedKey: computed, extensionKey: key, isProcessed: !diskIdentifier.isEmpty,
                serializer: policy.serializer, expiration: policy.diskExpiration, metadata: metadata,
                forcedExtension: policy.forcedExtension, syncsWrites: policy.syncsWrites)
        }
        guard policy.waitsForDisk else { return ioQueue.async { _ = write() } }
        let result = await awaitDelivery { deliver in ioQueue.async { deliver(write()) } }
        try result.get()
    }

    /// Keeps the source bytes on disk under the unprocessed `key`, as `policy` says (its expiration, extension, sync).
    public func storeOriginal(
        _ data: Data, forKey key: String, policy: CacheWritePolicy, metadata: CacheEntryMetadata?
    ) async throws(HalcyonError) {
        let write: @Sendable () -> Result<Void, HalcyonError> = {
            do throws(HalcyonError) {
                try self.diskStorage.store(value: data, forKey: key, expiration: policy.diskExpiration, metadata: metadata,
                                           forcedExtension: policy.forcedExtension, syncsWrites: policy.syncsWrites)
                self.storeInTiers(data, computedKey: key, expiration: policy.diskExpiration)
                return .success(())
            } catch {
                return .failure(error)
            }
        }
        guard policy.waitsForDisk else { return ioQueue.async { _ = write() } }
        let result = await awaitDelivery { deliver in ioQueue.async { deliver(write()) } }
        try result.get()
    }
}

extension ImageCacheResult {
    /// The public form of a lookup result (a stale entry, which plain reads never ask for, is `.none`).
    init(_ result: CacheLookupResult) {
        switch result {
        case .hit(let image, .memory): self = .memory(image)
        case .hit(let image, _): self = .disk(image)
        case .stale, .miss: self = .none
        }
    }
}

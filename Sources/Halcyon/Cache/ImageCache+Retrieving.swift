import Foundation

extension ImageCache {
    // MARK: - Retrieving

    /// Looks for the image for `key` made by `options.processor`: memory first, then disk, then the data ``tiers``.
    ///
    /// A disk hit is decoded with `options.cacheSerializer` and the options'
    /// decoding limits, off the caller's thread (on it with
    /// `loadDiskFileSynchronously`), then stored in memory with
    /// `memoryExpiration`. Reads extend expirations per
    /// `memoryExpirationExtending` and `diskExpirationExtending`. Bytes that no
    /// longer decode are removed and reported as `.none`; bytes over the
    /// options' pixel or frame limits fail with that processor error and stay
    /// cached. Disk I/O failures fail with `.cacheError(.cannotReadFile)`.
    public func retrieveImage(
        forKey key: String,
        options: HalcyonParsedOptionsInfo = HalcyonParsedOptionsInfo(nil),
        memoryExpiration: StorageExpiration? = nil,
        memoryExpirationExtending: ExpirationExtending = .cacheTime,
        diskExpirationExtending: ExpirationExtending = .cacheTime,
        loadDiskFileSynchronously: Bool = false,
        callbackQueue: DispatchQueue? = nil,
        completionHandler: @escaping @Sendable (Result<ImageCacheResult, HalcyonError>) -> Void
    ) {
        let lookup = Self.plainLookup(key, options: options, memoryExpiration: memoryExpiration,
                                      memoryExtending: memoryExpirationExtending, diskExtending: diskExpirationExtending)
        if let image = memoryStorage.value(forKey: lookup.computedKey, extendingExpiration: memoryExpirationExtending) {
            Self.deliver(.success(.memory(image)), on: callbackQueue, completionHandler)
            return
        }
        guard tiers.isEmpty else {
            // The data tiers are asked asynchronously, whatever `loadDiskFileSynchronously` says.
            Task {
                let result: Result<ImageCacheResult, HalcyonError>
                do throws(HalcyonError) { result = .success(ImageCacheResult(try await self.lookup(lookup))) } catch { result = .failure(error) }
                Self.deliver(result, on: callbackQueue, completionHandler)
            }
            return
        }
        let load: @Sendable () -> Void = {
            let result = self.diskLookup(lookup, isCancelled: { false }).map(ImageCacheResult.init)
            Self.deliver(result, on: callbackQueue, completionHandler)
        }
        if loadDiskFileSynchronously { load() } else { readQueue.execute(load) }
    }

    /// Looks for the image for `key` made by `options.processor`: memory first, then disk.
    ///
    /// The async form of ``retrieveImage(forKey:options:memoryExpiration:memoryExpirationExtending:diskExpirationExtending:loadDiskFileSynchronously:callbackQueue:completionHandler:)``;
    /// the disk read and decode run on the cache's queue, not the caller's executor.
    /// Cancelling the calling task makes it throw `requestError(.taskCancelled)`
    /// and keeps a disk hit read meanwhile out of memory.
    public func retrieveImage(
        forKey key: String,
        options: HalcyonParsedOptionsInfo = HalcyonParsedOptionsInfo(nil),
        memoryExpiration: StorageExpiration? = nil,
        memoryExpirationExtending: ExpirationExtending = .cacheTime,
        diskExpirationExtending: ExpirationExtending = .cacheTime
    ) async throws(HalcyonError) -> ImageCacheResult {
        var lookup = Self.plainLookup(key, options: options, memoryExpiration: memoryExpiration,
                                      memoryExtending: memoryExpirationExtending, diskExtending: diskExpirationExtending)
        lookup.readsMemory = true
        return ImageCacheResult(try await self.lookup(lookup))
    }

    /// The lookup of a plain cache read: no revalidation, memory then disk.
    private static func plainLookup(
        _ key: String, options: HalcyonParsedOptionsInfo, memoryExpiration: StorageExpiration?,
        memoryExtending: ExpirationExtending, diskExtending: ExpirationExtending
    ) -> CacheLookup {
        CacheLookup(
            key: key, processorIdentifier: processorIdentifier(for: options), decoding: options.processingContext,
            serializer: options.cacheSerializer, forcedExtension: options.forcedExtension, memoryExpiration: memoryExpiration,
            memoryExtending: memoryExtending, diskExtending: diskExtending, readsMemory: true, readsDisk: true,
            revalidates: false, forcesRevalidation: false)
    }

    /// Retrieves a result with options given as a ``HalcyonOptionsInfo`` list.
    public func retrieveImage(forKey key: String, options: HalcyonOptionsInfo?) async throws(HalcyonError) -> ImageCacheResult {
        try await retrieveImage(forKey: key, options: HalcyonParsedOptionsInfo(options))
    }

    /// The image for `key` made by the processor with `processorIdentifier`, from memory only.
    ///
    /// Runs on the caller's thread and never touches the disk.
    public func retrieveImageInMemoryCache(
        forKey key: String,
        processorIdentifier identifier: String = "",
        extendingExpiration: ExpirationExtending = .cacheTime
    ) -> Image? {
        memoryStorage.value(forKey: Self.computedKey(key, processorIdentifier: identifier), extendingExpiration: extendingExpiration)
    }

    /// The image for `key` made by the processor with `processorIdentifier`, from memory only.
    public func retrieveImageInMemoryCache(forKey key: String, options: HalcyonParsedOptionsInfo) -> Image? {
        retrieveImageInMemoryCache(forKey: key, processorIdentifier: Self.processorIdentifier(for: options))
    }

    /// The image for `key` made by `options.processor`, from disk only, decoded on the cache's queue.
    ///
    /// With `options.loadDiskFileSynchronously` the read and decode run on the
    /// calling thread instead, and with no `callbackQueue` the completion runs
    /// before this returns. Does not put the image in memory. `nil` when not
    /// on disk, expired, or no longer decodable (then removed).
    public func retrieveImageInDiskCache(
        forKey key: String,
        options: HalcyonParsedOptionsInfo = HalcyonParsedOptionsInfo(nil),
        extendingExpiration: ExpirationExtending = .cacheTime,
        callbackQueue: DispatchQueue? = nil,
        completionHandler: @escaping @Sendable (Result<Image?, HalcyonError>) -> Void
    ) {
        let computed = Self.computedKey(key, processorIdentifier: Self.diskProcessorIdentifier(for: options))
        let load: @Sendable () -> Void = {
            let result = self.loadFromDisk(computedKey: computed, extensionKey: key, options: options, extending: extendingExpiration)
            Self.deliver(result, on: callbackQueue, completionHandler)
        }
        if options.loadDiskFileSynchronously { load() } else { readQueue.execute(load) }
    }

    /// The image for `key` made by `options.processor`, from disk only; async form.
    public func retrieveImageInDiskCache(
        forKey key: String,
        options: HalcyonParsedOptionsInfo = HalcyonParsedOptionsInfo(nil),
        extendingExpiration: ExpirationExtending = .cacheTime
    ) async throws(HalcyonError) -> Image? {
        let result = await awaitDelivery { deliver in
            retrieveImageInDiskCache(forKey: key, options: options, extendingExpiration: extendingExpiration) {
                deliver($0)
            }
        }
        return try result.get()
    }

    /// The unprocessed image for `key` from disk (stored with no processor identifier), decoded with `options`.
    ///
    /// The options' decoding choices apply, `.onlyLoadFirstFrame` included, so
    /// an original kept with every frame serves a first-frame request too.
    func retrieveOriginalImageInDiskCache(
        forKey key: String,
        options: HalcyonParsedOptionsInfo,
        extendingExpiration: ExpirationExtending
    ) async throws(HalcyonError) -> Image? {
        let result = await readQueue.run {
            self.loadFromDisk(computedKey: key, extensionKey: key, options: options, extending: extendingExpiration)
        }
        return try result.get()
    }

    /// Reads and decodes the entry under `computedKey`, whose file extension comes from `extensionKey` (the source key).
    private func loadFromDisk(
        computedKey: String, extensionKey: String, options: HalcyonParsedOptionsInfo, extending: ExpirationExtending
    ) -> Result<Image?, HalcyonError> {
        diskReadWillStart.withLock { $0 }?(computedKey)
        let data: Data
        do throws(HalcyonError) {
            guard let stored = try diskStorage.value(forKey: computedKey, forcedExtension: options.forcedExtension,
                                                     extensionKey: extensionKey, extendingExpiration: extending) else {
                return .success(nil)
            }
            data = stored
        } catch {
            return .failure(error)
        }
        return decodeStored(data, computedKey: computedKey, extensionKey: extensionKey, serializer: options.cacheSerializer,
                            decoding: options.processingContext, forcedExtension: options.forcedExtension)
    }
}

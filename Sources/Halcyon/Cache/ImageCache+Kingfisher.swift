import Dispatch
import Foundation

// Kingfisher's remaining `ImageCache` call shapes: the cached-type check off the caller's thread
// (`imageCachedTypeAsync`, Kingfisher 8.11), reads with an option list, and the whole-cache clears.
// Kingfisher's synchronous names keep one synchronous meaning: none is overloaded with an `async` twin
// that Kingfisher does not have, so a ported call compiles the same in an `async` function.

extension ImageCache {
    // MARK: - Cached type, off the caller's thread

    /// Where the image for `key` and `processorIdentifier` is cached, with the disk check on the cache's queue
    /// rather than the caller's thread; `completionHandler` gets the answer on `callbackQueue`.
    ///
    /// Kingfisher's `imageCachedTypeAsync(forKey:processorIdentifier:forcedExtension:callbackQueue:completionHandler:)`.
    /// A memory hit needs no I/O and goes to `callbackQueue` from the calling thread (with `.untouch`, before
    /// this returns); the disk check runs behind the cache's pending writes, so it sees every store issued before it.
    public func imageCachedTypeAsync(
        forKey key: String,
        processorIdentifier identifier: String = "",
        forcedExtension: String? = nil,
        callbackQueue: CallbackQueue = .mainCurrentOrAsync,
        completionHandler: @escaping @Sendable (CacheType) -> Void
    ) {
        let computed = Self.computedKey(key, processorIdentifier: identifier)
        if memoryStorage.isCached(forKey: computed) {
            callbackQueue.execute { completionHandler(.memory) }
            return
        }
        ioQueue.async {
            let cached = self.diskStorage.isCached(forKey: computed, forcedExtension: forcedExtension, extensionKey: key)
            callbackQueue.execute { completionHandler(cached ? .disk : .none) }
        }
    }

    /// Where the image for `key` and `processorIdentifier` is cached, with the disk check on the cache's queue.
    ///
    /// Kingfisher's `imageCachedTypeAsync(forKey:processorIdentifier:forcedExtension:) async`; the synchronous
    /// ``imageCachedType(forKey:processorIdentifier:forcedExtension:)`` stays synchronous in `async` code too.
    public func imageCachedTypeAsync(
        forKey key: String,
        processorIdentifier identifier: String = "",
        forcedExtension: String? = nil
    ) async -> CacheType {
        await awaitDelivery { deliver in
            imageCachedTypeAsync(forKey: key, processorIdentifier: identifier, forcedExtension: forcedExtension,
                                 callbackQueue: .untouch) { deliver($0) }
        }
    }

    // MARK: - Reading with an option list

    /// Looks for the image for `key` made by the options' processor, memory then disk, and calls
    /// `completionHandler` on `callbackQueue` (Kingfisher's `retrieveImage(forKey:options:callbackQueue:completionHandler:)`).
    ///
    /// The options' `.loadDiskFileSynchronously`, `.memoryCacheExpiration` and access-extending expirations apply.
    public func retrieveImage(
        forKey key: String,
        options: HalcyonOptionsInfo?,
        callbackQueue: CallbackQueue = .mainCurrentOrAsync,
        completionHandler: (@Sendable (Result<ImageCacheResult, HalcyonError>) -> Void)?
    ) {
        guard let completionHandler else { return }
        let parsed = HalcyonParsedOptionsInfo(options)
        retrieveImage(
            forKey: key, options: parsed, memoryExpiration: parsed.memoryCacheExpiration,
            memoryExpirationExtending: parsed.memoryCacheAccessExtendingExpiration,
            diskExpirationExtending: parsed.diskCacheAccessExtendingExpiration,
            loadDiskFileSynchronously: parsed.loadDiskFileSynchronously
        ) { result in
            callbackQueue.execute { completionHandler(result) }
        }
    }

    /// The image for `key` made by the options' processor, from memory only, on the caller's thread.
    public func retrieveImageInMemoryCache(forKey key: String, options: HalcyonOptionsInfo?) -> Image? {
        let parsed = HalcyonParsedOptionsInfo(options)
        return retrieveImageInMemoryCache(forKey: key, processorIdentifier: Self.processorIdentifier(for: parsed),
                                          extendingExpiration: parsed.memoryCacheAccessExtendingExpiration)
    }

    /// The image for `key` made by the options' processor, from disk only; `completionHandler` runs on
    /// `callbackQueue` (Kingfisher's `retrieveImageInDiskCache(forKey:options:callbackQueue:completionHandler:)`).
    public func retrieveImageInDiskCache(
        forKey key: String,
        options: HalcyonOptionsInfo?,
        callbackQueue: CallbackQueue = .untouch,
        completionHandler: @escaping @Sendable (Result<Image?, HalcyonError>) -> Void
    ) {
        let parsed = HalcyonParsedOptionsInfo(options)
        retrieveImageInDiskCache(forKey: key, options: parsed, extendingExpiration: parsed.diskCacheAccessExtendingExpiration) { result in
            callbackQueue.execute { completionHandler(result) }
        }
    }

    /// The image for `key` made by the options' processor, from disk only; async form.
    public func retrieveImageInDiskCache(forKey key: String, options: HalcyonOptionsInfo?) async throws(HalcyonError) -> Image? {
        let parsed = HalcyonParsedOptionsInfo(options)
        return try await retrieveImageInDiskCache(forKey: key, options: parsed, extendingExpiration: parsed.diskCacheAccessExtendingExpiration)
    }

    // MARK: - Whole cache

    /// Empties memory at once and the disk on the cache's queue; `completion` gets the disk's result
    /// (Kingfisher's handler takes no argument: write `{ _ in … }`).
    public func clearCache(completion: (@Sendable (Result<Void, HalcyonError>) -> Void)? = nil) {
        clearMemoryCache()
        clearDiskCache(callbackQueue: nil, completion: completion)
    }

    /// Empties memory and disk; returns when the disk is empty.
    ///
    /// Throws `.cacheError(.cannotRemoveFile)` for a file that cannot be deleted (Kingfisher's does not throw).
    public func clearCache() async throws(HalcyonError) {
        clearMemoryCache()
        try await clearDiskCache()
    }

    /// Removes expired images from memory at once and from disk on the cache's queue, then calls `completion`.
    public func cleanExpiredCache(completion: (@Sendable () -> Void)? = nil) {
        cleanExpiredMemoryCache()
        cleanExpiredDiskCache(callbackQueue: nil) { _ in completion?() }
    }

    /// Removes expired images from memory and disk; returns when the disk is done.
    public func cleanExpiredCache() async {
        cleanExpiredMemoryCache()
        await cleanExpiredDiskCache()
    }
}

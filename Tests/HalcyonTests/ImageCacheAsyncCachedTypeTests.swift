import Dispatch
import Foundation
@testable import Halcyon
import Testing

/// A fresh cache in a folder of its own (Kingfisher's `setUp`), removed after `body` (its `tearDown`).
private func withFreshCache(_ body: (ImageCache) async throws -> Void) async throws {
    let directory = TemporaryDirectory()
    defer { directory.remove() }
    let cache = try ImageCache(name: "test-\(UUID().uuidString)", cacheDirectoryURL: directory.url)
    try await body(cache)
}

/// PNG bytes, stored straight into the disk storage (Kingfisher's `testImageData`).
private func testImageData() throws -> Data {
    try makeTestImage().encoded(as: .png())
}

/// What a callback saw: the answer, its thread, and which of the queues it ran on.
private struct CallbackRecord: Sendable {
    var type: CacheType?
    var thread: pthread_t?
    var onIOQueue = false
    var onMainQueue = false
}

/// Kingfisher 8.11's `ImageCacheAsyncCachedTypeTests` (Tests/KingfisherTests/ImageCacheTests.swift), ported:
/// `imageCachedTypeAsync` answers a memory hit without I/O, checks the disk off the caller's thread, and
/// delivers on the callback queue it is given; its `async` form returns the same answer.
@Suite("ImageCacheAsyncCachedTypeTests")
struct ImageCacheAsyncCachedTypeTests {
    @Test("testImageCachedTypeAsyncMemoryHit: answered on the caller's thread with .untouch")
    func imageCachedTypeAsyncMemoryHit() async throws {
        try await withFreshCache { cache in
            let key = "memory-hit"
            let computedKey = ImageCache.computedKey(key, processorIdentifier: DefaultImageProcessor.default.identifier)
            cache.memoryStorage.store(value: try makeTestImage(), forKey: computedKey)
            let record = Locked(CallbackRecord())
            let caller = pthread_self()
            cache.imageCachedTypeAsync(forKey: key, callbackQueue: .untouch) { type in
                record.withLock { $0.type = type; $0.thread = pthread_self() }
            }
            // Kingfisher asserts the main thread (its caller's); here: done before the call returned, on the caller's thread.
            let seen = record.withLock { $0 }
            #expect(seen.type == .memory)
            #expect(seen.thread.map { pthread_equal($0, caller) != 0 } == true)
        }
    }

    @Test("testImageCachedTypeAsyncDiskHitRunsOffMainThreadWhenCallbackUntouch: the disk check runs on the cache's queue")
    func imageCachedTypeAsyncDiskHitRunsOffCallerThread() async throws {
        try await withFreshCache { cache in
            let key = "disk-hit"
            let computedKey = ImageCache.computedKey(key, processorIdentifier: DefaultImageProcessor.default.identifier)
            try cache.diskStorage.store(value: try testImageData(), forKey: computedKey, expiration: .never)
            let ioKey = DispatchSpecificKey<Bool>()
            cache.ioQueue.setSpecific(key: ioKey, value: true)
            let record = await withCheckedContinuation { (continuation: CheckedContinuation<CallbackRecord, Never>) in
                cache.imageCachedTypeAsync(forKey: key, callbackQueue: .untouch) { type in
                    continuation.resume(returning: CallbackRecord(
                        type: type, thread: pthread_self(), onIOQueue: DispatchQueue.getSpecific(key: ioKey) == true))
                }
            }
            #expect(record.type == .disk)
            #expect(record.onIOQueue, "the disk check must run on the cache's I/O queue, not the caller's thread")
        }
    }

    @Test("testImageCachedTypeAsyncNone")
    func imageCachedTypeAsyncNone() async throws {
        try await withFreshCache { cache in
            let type = await withCheckedContinuation { (continuation: CheckedContinuation<CacheType, Never>) in
                cache.imageCachedTypeAsync(forKey: "missing", callbackQueue: .untouch) { continuation.resume(returning: $0) }
            }
            #expect(type == .none)
        }
    }

    @Test("testImageCachedTypeAsyncDeliversOnMainQueueWhenRequested")
    func imageCachedTypeAsyncDeliversOnMainQueueWhenRequested() async throws {
        try await withFreshCache { cache in
            let key = "main-callback"
            let computedKey = ImageCache.computedKey(key, processorIdentifier: DefaultImageProcessor.default.identifier)
            try cache.diskStorage.store(value: try testImageData(), forKey: computedKey, expiration: .never)
            // The main queue is drained while the test awaits (swift-testing runs tests off the main actor). On Linux
            // it runs on a worker thread once the main thread has parked in dispatch_main(), so Kingfisher's
            // `Thread.isMainThread` becomes "ran on the main queue".
            let mainKey = DispatchSpecificKey<Bool>()
            DispatchQueue.main.setSpecific(key: mainKey, value: true)
            defer { DispatchQueue.main.setSpecific(key: mainKey, value: nil) }
            let record = await withCheckedContinuation { (continuation: CheckedContinuation<CallbackRecord, Never>) in
                DispatchQueue.global().async {
                    cache.imageCachedTypeAsync(forKey: key, callbackQueue: .mainAsync) { type in
                        continuation.resume(returning: CallbackRecord(type: type, onMainQueue: DispatchQueue.getSpecific(key: mainKey) == true))
                    }
                }
            }
            #expect(record.type == .disk)
            #expect(record.onMainQueue)
        }
    }

    @Test("testImageCachedTypeAsyncAwaitReturns")
    func imageCachedTypeAsyncAwaitReturns() async throws {
        try await withFreshCache { cache in
            let key = "async-await"
            let computedKey = ImageCache.computedKey(key, processorIdentifier: DefaultImageProcessor.default.identifier)
            try cache.diskStorage.store(value: try testImageData(), forKey: computedKey, expiration: .never)
            let type = await cache.imageCachedTypeAsync(forKey: key)
            #expect(type == .disk)
        }
    }
}

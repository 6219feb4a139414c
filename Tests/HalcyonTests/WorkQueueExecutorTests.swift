#if canImport(Glibc)
import Glibc
#endif
import Dispatch
import Foundation
import Testing
@testable import Halcyon

/// A `WorkQueue` as a task executor: a task that prefers a queue does its CPU work on its own thread, in the slot it
/// holds, instead of waking another thread for each step; a thread that ends a job runs the next waiting one.
@Suite("Work queue as an executor", .serialized)
struct WorkQueueExecutorTests {
    /// Which queue a job ran on, and how many jobs the other queue was running then.
    struct Seen: Sendable {
        var queue: String?
        var otherRunning: Int
        var bytes: Int
    }

    /// A real encode asked of `other`, reporting where it ran.
    static func encode(on other: WorkQueue) async throws -> Seen {
        let image = try TestImages.gradient(width: 400, height: 300)
        return try await RenderCancellation.perform(on: other) { () throws(HalcyonError) -> Seen in
            let data = try ImageEncoder.encode(image, as: .jpeg(quality: 80))
            return Seen(queue: WorkQueue.current?.name, otherRunning: other.runningCount, bytes: data.count)
        }
    }

    @Test("CPU work asked of any queue by a task that prefers a queue runs on the task's thread, in its slot")
    func inlineInPreferredQueue() async throws {
        let home = WorkQueue(name: "test.home", width: 1)
        let other = WorkQueue(name: "test.other", width: 1)
        let inside = try await withTaskExecutorPreference(home) { try await Self.encode(on: other) }
        #expect(inside.queue == "test.home")
        #expect(inside.otherRunning == 0)
        #expect(inside.bytes > 0)
        // Without the preference the work hops to the queue it was asked of.
        let outside = try await Self.encode(on: other)
        #expect(outside.queue == "test.other")
        #expect(outside.otherRunning == 1)
        #expect(WorkQueue.current == nil)
    }

    @Test("a retrieve inside a queue's preference decodes and processes on that queue's thread (its stage task too)")
    func retrieveStaysOnPreferredQueue() async throws {
        let home = WorkQueue(name: "test.retrieve-home", width: 2)
        let seen = Locked<[String?]>([])
        let processor = GeneralProcessor(identifier: "test.where-\(UUID().uuidString)") { item, options throws(HalcyonError) in
            seen.withLock { $0.append(WorkQueue.current?.name) }
            return try DefaultImageProcessor.default.process(item: item, options: options)
        }
        let manager = HalcyonManager(downloader: ImageDownloader(name: "executor-test"), cache: ImageCache(name: "executor-\(UUID().uuidString)"))
        let data = try TestImages.encodedGradient(.jpeg(quality: 90), width: 640, height: 480)
        let provider = RawImageDataProvider(data: data, cacheKey: "executor-\(UUID().uuidString)")
        let options: HalcyonOptionsInfo = [.processor(processor), .cacheMemoryOnly, .forceRefresh, .callbackQueue(.untouch)]
        let result = try await withTaskExecutorPreference(home) {
            try await manager.retrieveImage(with: .provider(provider), options: options)
        }
        #expect(result.image.width == 640)
        #expect(seen.withLock { $0 } == ["test.retrieve-home"])
        _ = try await manager.retrieveImage(with: .provider(provider), options: options)
        #expect(seen.withLock { $0.last } != "test.retrieve-home")
    }

    @Test("cancelling a task whose encode runs in its own slot stops the encode and throws taskCancelled")
    func inlineWorkStopsOnCancel() async throws {
        let image = try RenderCancellationTests.noise(width: 4000, height: 3000)
        let home = WorkQueue(name: "test.cancel-home", width: 1)
        let start = RenderCancellationTests.processCPUTime()
        let task = Task {
            try await withTaskExecutorPreference(home) {
                try await RenderCancellation.perform(on: WorkQueue(name: "test.cancel-other", width: 1)) { () throws(HalcyonError) -> Data in
                    #expect(WorkQueue.current === home)
                    return try ImageEncoder.encode(image, as: .png())
                }
            }
        }
        try await RenderCancellationTests.waitForCPU(0.3, since: start)
        task.cancel()
        // libvips' PNG saver finishes the buffer of rows in hand (see RenderCancellationTests.cancelledEncodeStops).
        try await RenderCancellationTests.expectEncodeStopped(task, settle: .milliseconds(300))
    }

    @Test("a thread that ends a job runs the next waiting one itself")
    func nextJobOnSameThread() async {
        let queue = WorkQueue(name: "test.drain", width: 1)
        let release = DispatchSemaphore(value: 0)
        let threads = Locked<[UInt]>([])
        await withCheckedContinuation { (done: CheckedContinuation<Void, Never>) in
            queue.execute {
                threads.withLock { $0.append(UInt(pthread_self())) }
                release.wait()
            }
            queue.execute {
                threads.withLock { $0.append(UInt(pthread_self())) }
                done.resume()
            }
            #expect(queue.pendingCount == 1)
            release.signal()
        }
        let seen = threads.withLock { $0 }
        #expect(seen.count == 2 && seen[0] == seen[1])
    }
}

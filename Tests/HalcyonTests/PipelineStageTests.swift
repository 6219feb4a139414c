import Dispatch
import Foundation
import Testing
@testable import Halcyon

/// A loader that serves bytes from memory, without sockets, and answers validators it recognises with 304.
private final class MemoryDataLoader: DataLoading {
    private struct State {
        var bodies: [URL: (data: Data, etag: String)] = [:]
        var requests: [(url: URL, validators: CacheValidators?)] = []
    }

    private let state = Locked(State())

    func serve(_ data: Data, at url: URL, etag: String) {
        state.withLock { $0.bodies[url] = (data, etag) }
    }

    var requests: [(url: URL, validators: CacheValidators?)] { state.withLock { $0.requests } }

    func loadData(_ request: DataLoadingRequest) async throws(HalcyonError) -> DataLoadingResult {
        let body = state.withLock { state -> (data: Data, etag: String)? in
            state.requests.append((request.url, request.validators))
            return state.bodies[request.url]
        }
        guard let body else {
            throw .responseError(reason: .invalidHTTPStatusCode(url: request.url, statusCode: 404))
        }
        if request.validators?.etag == body.etag { return .notModified }
        let response = ImageDownloadResponse(url: request.url, statusCode: 200, headers: ["ETag": body.etag, "Content-Type": "image/png"])
        let metrics = NetworkMetrics(
            originalURL: request.url, url: request.url, statusCode: 200, redirectCount: 0, startDate: Date(),
            queueDuration: 0, responseHeadDuration: 0, totalDuration: 0, receivedBytes: body.data.count,
            resumedBytes: 0, expectedBytes: body.data.count)
        return .loaded(ImageDataLoadingResult(url: request.url, data: body.data, response: response, metrics: metrics))
    }
}

@Suite("Pipeline stages, priorities, queues and data loading")
struct PipelineStageTests {
    @Test("a stage runs at the highest priority of its subscribers and drops when that one leaves")
    func stagePriorityFollowsSubscribers() async throws {
        let stage = PipelineStage<String, Int>()
        let (release, releaseContinuation) = AsyncStream<Void>.makeStream()
        let seen = Locked<[Float]>([])
        let low = LoadPriority(0.2)
        let high = LoadPriority(0.9)
        let first = Task {
            try await stage.value(forKey: "k", priority: low) { priority in
                priority.observe { value in seen.withLock { $0.append(value) } }
                for await _ in release { break }
                return 7
            }
        }
        while stage.priority(forKey: "k") == nil { try await Task.sleep(for: .milliseconds(1)) }
        #expect(stage.priority(forKey: "k") == 0.2)
        let second = Task { try await stage.value(forKey: "k", priority: high) { _ in 0 } }
        while stage.priority(forKey: "k") != 0.9 { try await Task.sleep(for: .milliseconds(1)) }
        low.value = 0.3
        #expect(stage.priority(forKey: "k") == 0.9, "a lower subscriber's change does not lower the stage")
        second.cancel()
        await #expect(throws: CancellationError.self) { try await second.value }
        #expect(stage.priority(forKey: "k") == 0.3, "the stage falls to its remaining subscriber's priority")
        releaseContinuation.yield()
        #expect(try await first.value == 7)
        #expect(seen.withLock { $0 } == [0.9, 0.3])
        #expect(stage.inFlightCount == 0)
    }

    @Test("a work queue never runs more jobs than its width")
    func workQueueIsBounded() async throws {
        let queue = WorkQueue(name: "test.bounded", width: 2)
        let running = Locked((now: 0, peak: 0))
        await withTaskGroup(of: Void.self) { group in
            for _ in 0..<12 {
                group.addTask {
                    await queue.run {
                        running.withLock { $0.now += 1; $0.peak = max($0.peak, $0.now) }
                        // Stay until a second job runs beside this one (or 1 s passes): on a busy machine the
                        // next job may reach the queue only after a short one has already left.
                        let waitUntil = ContinuousClock.now + .seconds(1)
                        while running.withLock({ $0.now }) < 2, ContinuousClock.now < waitUntil { usleep(1000) }
                        usleep(5000)
                        running.withLock { $0.now -= 1 }
                    }
                }
            }
        }
        #expect(running.withLock { $0.peak } == 2)
        // A slot is freed just after its job has delivered its value.
        let deadline = ContinuousClock.now + .seconds(5)
        while queue.runningCount > 0, ContinuousClock.now < deadline { try await Task.sleep(for: .milliseconds(1)) }
        #expect(queue.runningCount == 0 && queue.pendingCount == 0)
    }

    @Test("a work queue keeps nothing a finished job captured")
    func workQueueReleasesFinishedJobs() async throws {
        let queue = WorkQueue(name: "test.release", width: 1)
        let probe = ReleaseProbe()
        do {
            let captured = Captured(probe: probe)
            await queue.run { _ = captured }
        }
        let deadline = ContinuousClock.now + .seconds(5)
        while !probe.released, ContinuousClock.now < deadline { try await Task.sleep(for: .milliseconds(1)) }
        #expect(probe.released, "the queue still holds the finished job's captures")
    }

    @Test("a manager on a socket-free DataLoading loads, caches, and revalidates with a 304 value")
    func dataLoaderWithoutSockets() async throws {
        let folder = FileManager.default.temporaryDirectory.appendingPathComponent("halcyon-loader-\(UUID().uuidString)")
        defer { try? FileManager.default.removeItem(at: folder) }
        let cache = try ImageCache(name: "loader", cacheDirectoryURL: folder)
        let loader = MemoryDataLoader()
        let manager = HalcyonManager(dataLoader: loader, cache: cache)
        let url = URL(string: "https://images.invalid/a.png")!
        loader.serve(try TestImages.encodedGradient(.png(), width: 30, height: 20), at: url, etag: "\"e1\"")

        let first = try await manager.retrieveImage(with: url, options: [.waitForCache, .diskCacheExpiration(.seconds(60))])
        #expect(first.cacheType == .none && first.image.width == 30)
        cache.clearMemoryCache()
        let revalidated = try await manager.retrieveImage(with: url, options: [.refreshCached])
        #expect(revalidated.cacheType == .disk && revalidated.image.width == 30)
        let requests = loader.requests
        #expect(requests.count == 2)
        #expect(requests.last?.validators?.etag == "\"e1\"", "the second load was conditional")
        let memoryHit = try await manager.retrieveImage(with: url)
        #expect(memoryHit.cacheType == .memory)
        #expect(loader.requests.count == 2)
    }
}

/// Records that a ``Captured`` was deallocated.
private final class ReleaseProbe: Sendable {
    private let state = Locked(false)
    var released: Bool { state.withLock { $0 } }
    func markReleased() { state.withLock { $0 = true } }
}

/// Tells its probe when it is deallocated.
private final class Captured: Sendable {
    let probe: ReleaseProbe
    init(probe: ReleaseProbe) { self.probe = probe }
    deinit { probe.markReleased() }
}

import Dispatch
import Foundation
import Testing
@testable import Halcyon

#if canImport(Glibc)
import Glibc
#endif

/// Cancellation reaches libvips: once a retrieve, a processing or an encode is
/// cancelled, the process stops burning CPU within 100 ms.
@Suite("Render cancellation", .serialized)
struct RenderCancellationTests {
    /// User + system CPU time of the whole process, in seconds.
    static func processCPUTime() -> Double {
        var usage = rusage()
        getrusage(RUSAGE_SELF.rawValue, &usage)
        return Double(usage.ru_utime.tv_sec) + Double(usage.ru_utime.tv_usec) / 1e6
            + Double(usage.ru_stime.tv_sec) + Double(usage.ru_stime.tv_usec) / 1e6
    }

    /// Waits until the process has used `seconds` of CPU since `start` (the job is really running).
    static func waitForCPU(_ seconds: Double, since start: Double, deadline: Duration = .seconds(30)) async throws {
        let end = ContinuousClock.now + deadline
        while processCPUTime() - start < seconds {
            guard ContinuousClock.now < end else {
                Issue.record("the job did not start burning CPU")
                return
            }
            try await Task.sleep(for: .milliseconds(5))
        }
    }

    /// CPU seconds used in the 400 ms after `settle` (100 ms) past a cancel: near zero once the work has stopped.
    static func cpuAfterCancel(settle: Duration = .milliseconds(100)) async throws -> Double {
        try await Task.sleep(for: settle)
        let settled = processCPUTime()
        try await Task.sleep(for: .milliseconds(400))
        return processCPUTime() - settled
    }

    /// 12 MP of pseudo-random RGB noise: slow to compress, slow to blur.
    static func noise(width: Int, height: Int) throws -> Image {
        var pixels = [UInt8](repeating: 255, count: width * height * 4)
        var state: UInt32 = 2_463_534_242
        pixels.withUnsafeMutableBufferPointer { buffer in
            var index = 0
            while index < buffer.count {
                state ^= state << 13
                state ^= state >> 17
                state ^= state << 5
                buffer[index] = UInt8(truncatingIfNeeded: state)
                buffer[index + 1] = UInt8(truncatingIfNeeded: state >> 8)
                buffer[index + 2] = UInt8(truncatingIfNeeded: state >> 16)
                index += 4
            }
        }
        return try Image(rgbaPixels: pixels, width: width, height: height)
    }

    @Test("cancelling a retrieve of a 12 MP image stops decode and processing CPU within 100 ms")
    func cancelledRetrieveStopsCPU() async throws {
        let data = try TestImages.encodedGradient(.jpeg(quality: 90), width: 4000, height: 3000)
        let folder = FileManager.default.temporaryDirectory.appendingPathComponent("halcyon-cancel-\(UUID().uuidString)")
        defer { try? FileManager.default.removeItem(at: folder) }
        let disk = try DiskStorage.Backend(config: DiskStorage.Config(name: "cancel", sizeLimit: 0, directory: folder))
        let memory = MemoryStorage.Backend<Image>(config: MemoryStorage.Config(totalCostLimit: 256 * 1024 * 1024))
        let manager = HalcyonManager(downloader: ImageDownloader(name: "cancel-test"), cache: ImageCache(memoryStorage: memory, diskStorage: disk))
        let provider = RawImageDataProvider(data: data, cacheKey: "cancel-\(UUID().uuidString)")

        let start = Self.processCPUTime()
        let task = Task {
            try await manager.retrieveImage(
                with: .provider(provider),
                options: [.processor(BlurImageProcessor(blurRadius: 24)), .cacheMemoryOnly, .callbackQueue(.untouch)])
        }
        try await Self.waitForCPU(0.8, since: start)
        let cancelled = ContinuousClock.now
        task.cancel()
        let used = try await Self.cpuAfterCancel()
        #expect(used < 0.05, "the process used \(used) s of CPU between 100 and 500 ms after the cancel")
        await expectCancelled(task)
        #expect(ContinuousClock.now - cancelled < .seconds(2))
        #expect(manager.cache.memoryStorage.isCached(forKey: ImageCache.computedKey(provider.cacheKey, processorIdentifier: BlurImageProcessor(blurRadius: 24).identifier)) == false)
    }

    @Test("cancelling an encode stops it at the next strip and throws taskCancelled")
    func cancelledEncodeStops() async throws {
        let image = try Self.noise(width: 4000, height: 3000)
        let queue = DispatchQueue(label: "test.encode")
        let start = Self.processCPUTime()
        let task = Task {
            try await RenderCancellation.perform(on: .dispatch(queue)) { () throws(HalcyonError) -> Data in
                try ImageEncoder.encode(image, as: .png())
            }
        }
        try await Self.waitForCPU(0.3, since: start)
        task.cancel()
        // This 48 MB image goes to libvips' PNG saver, which compresses a buffer of rows on a thread of its own and
        // finishes the one in hand (zlib on noise: over 100 ms under load). The whole encode takes about 1.8 s, so one
        // that ignored the cancel would still burn CPU in the window after 300 ms.
        try await Self.expectEncodeStopped(task, settle: .milliseconds(300))
    }

    /// The encoders on the calling thread, each with the upscale it is cancelled in.
    static let inlineEncoders: [(name: String, scale: Double, encode: @Sendable (VipsImageRef) throws(HalcyonError) -> Data)] = [
        ("JPEG", 6, { image throws(HalcyonError) in try ImageEncoder.jpeg(image, quality: 80, progressive: false, engines: .preferred) }),
        ("WebP", 4, { image throws(HalcyonError) in try ImageEncoder.webp(image, quality: 75, lossless: false, engines: .preferred) }),
        ("AVIF", 4, { image throws(HalcyonError) in try ImageEncoder.avif(image, quality: 65, lossless: false, engines: .preferred) }),
    ]

    @Test("cancelling an encode on the calling thread (JPEG, WebP, AVIF) stops it at its next strip and throws taskCancelled",
          arguments: [0, 1, 2])
    func cancelledInlineEncodeStops(encoder: Int) async throws {
        let (name, scale, encode) = Self.inlineEncoders[encoder]
        if name == "AVIF", !ImageEncoder.canEncodeAVIF { return }
        // A lazy Lanczos upscale (9600×7200 or 6400×4800): each strip costs CPU, so the encode runs for seconds, long
        // past the cancel. WebP's frame and AVIF's plane are allocated whole (92 MB), hence their smaller scale.
        let noise = try Self.noise(width: 1600, height: 1200).vips.flattened(background: [255, 255, 255])
        let big = try noise.resizedByLibvips(horizontal: scale, vertical: scale)
        let engines = ImageEngines.preferred
        let chosen = [engines.jpegSaveEngine(for: big), engines.webpSaveEngine(for: big), engines.avifSaveEngine(for: big)]
        try #require(chosen[encoder] == .halcyon, "\(name): the encoder on the calling thread takes the image")
        let queue = DispatchQueue(label: "test.\(name)")
        let start = Self.processCPUTime()
        let task = Task {
            try await RenderCancellation.perform(on: .dispatch(queue)) { () throws(HalcyonError) -> Data in try encode(big) }
        }
        try await Self.waitForCPU(0.3, since: start)
        task.cancel()
        try await Self.expectEncodeStopped(task, "\(name): ")
    }

    /// Called right after `task`'s cancel: the process burns no CPU in the 400 ms after `settle`, measured while the
    /// task may still run (an encode that ignored the cancel would go on for seconds); the task returns within 2 s of
    /// the cancel (wall time only bounds the strip in flight, slower on a loaded machine) and throws `taskCancelled`.
    static func expectEncodeStopped(_ task: Task<Data, any Error>, _ label: String = "", settle: Duration = .milliseconds(100)) async throws {
        let cancelled = ContinuousClock.now
        let used = try await cpuAfterCancel(settle: settle)
        #expect(used < 0.05, "\(label)the process used \(used) s of CPU in the 400 ms from \(settle) after the cancel")
        let result = await task.result
        let returnedAfter = ContinuousClock.now - cancelled
        #expect(returnedAfter < .seconds(2), "\(label)the encode returned \(returnedAfter) after its cancel")
        switch result {
        case .success: Issue.record("\(label)a cancelled encode returned data")
        case .failure(let error): #expect((error as? HalcyonError)?.isTaskCancelled == true, "\(label)\(error)")
        }
    }

    @Test("work under an untriggered cancellation runs to its end; a cancelled one does not start")
    func untriggeredRunsToTheEnd() throws {
        let cancellation = RenderCancellation()
        let image = try TestImages.gradient(width: 300, height: 200)
        let small = try cancellation.run { () throws(HalcyonError) -> Image in
            try BlurImageProcessor(blurRadius: 2).process(item: .image(image), options: HalcyonParsedOptionsInfo(nil))
        }
        #expect(small.width == 300 && small.height == 200)
        cancellation.cancel()
        #expect(throws: HalcyonError.self) {
            try cancellation.run { () throws(HalcyonError) -> Data in try ImageEncoder.encode(image, as: .png()) }
        }
    }
}

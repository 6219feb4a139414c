import Foundation
@testable import Halcyon
import Testing

/// Progressive JPEG previews from a real progressive JPEG (libvips `interlace`) served in slow chunks.
@Suite("Progressive JPEG previews")
struct ProgressiveJPEGTests {
    /// A 256×192 gradient with noise, as a progressive (or baseline) JPEG.
    static func jpeg(progressive: Bool) throws -> Data {
        var pixels = TestImages.gradientPixels(width: 256, height: 192)
        var seed: UInt32 = 7
        for index in stride(from: 0, to: pixels.count, by: 4) {
            seed = seed &* 1_103_515_245 &+ 12345
            pixels[index + 2] = UInt8(truncatingIfNeeded: seed >> 24)
        }
        return try Image(rgbaPixels: pixels, width: 256, height: 192).encoded(as: .jpeg(quality: 90, progressive: progressive))
    }

    /// Mean absolute difference per channel between two images of one size.
    static func difference(_ a: Image, _ b: Image) throws -> Double {
        let (x, y) = (try a.rgbaPixels(), try b.rgbaPixels())
        var total = 0.0
        for index in x.indices where index % 4 != 3 { total += abs(Double(x[index]) - Double(y[index])) }
        return total / Double(x.count / 4 * 3)
    }

    /// PSNR in dB of `a` against `b` over the colour channels (infinity when equal).
    static func psnr(_ a: Image, _ b: Image) throws -> Double {
        let (x, y) = (try a.rgbaPixels(), try b.rgbaPixels())
        var squared = 0.0
        for index in x.indices where index % 4 != 3 {
            let delta = Double(x[index]) - Double(y[index])
            squared += delta * delta
        }
        let mse = squared / Double(x.count / 4 * 3)
        return mse == 0 ? .infinity : 10 * log10(255 * 255 / mse)
    }

    /// Retrieves the slow image with `progressive` settings (collecting previews); returns them and the result.
    ///
    /// With `cancelAfterFirst`, the first preview's handler works for `cancelAfter` seconds (as a busy app or a loaded
    /// machine would, while more scans arrive), then cancels the retrieval, or cancels it as soon as its task is known.
    static func retrieve(_ fixture: ManagerFixture, _ target: String, isFastestScan: Bool, cancelAfterFirst: Bool = false,
                         cancelAfter: TimeInterval = 0) async -> ([Image], Result<RetrieveImageResult, HalcyonError>) {
        let previews = Locked<[Image]>([])
        let task = Locked<(task: RetrieveImageTask?, cancel: Bool)>((nil, false))
        let settings = ImageProgressive(isBlur: false, isFastestScan: isFastestScan, scanInterval: 0) { image in
            previews.withLock { $0.append(image) }
            guard cancelAfterFirst else { return }
            usleep(useconds_t(cancelAfter * 1_000_000))
            task.withLock { $0.cancel = true; $0.task?.cancel() }
        }
        let result = await awaitResult { done in
            let started = fixture.manager.retrieveImage(
                with: fixture.url(target), options: [.progressiveJPEG(settings), .callbackQueue(.untouch), .forceRefresh], completionHandler: done)
            task.withLock { $0.task = started; if $0.cancel { started?.cancel() } }
        }
        return (previews.withLock { $0 }, result)
    }

    @Test("Each completed scan gives a full-size preview of rising quality, then the final image; the cache gets only the final")
    func previews() async throws {
        let source = try Self.jpeg(progressive: true)
        let fixture = try await ManagerFixture.make(image: source)
        defer { Task { await fixture.shutdown() } }
        let (previews, result) = await Self.retrieve(fixture, "/slow/p?delay=40&chunks=16", isFastestScan: false)
        let final = try result.get().image
        let reference = try ImageDecoder.decode(source)
        #expect(try Self.difference(final, reference) == 0, "the final image is the plain decode")
        #expect(previews.count >= 2, "\(previews.count) previews")
        #expect(previews.allSatisfy { $0.width == 256 && $0.height == 192 })
        for (index, preview) in previews.enumerated() {
            // The sample run the issue asks for: each preview's size and its PSNR against the final image.
            print("progressive preview \(index + 1)/\(previews.count): \(preview.width)x\(preview.height), PSNR \(String(format: "%.1f", try Self.psnr(preview, final))) dB vs the final image")
        }
        if let first = previews.first, let last = previews.last, previews.count >= 2 {
            #expect(try Self.psnr(last, final) > Self.psnr(first, final))
            let (early, late) = (try Self.difference(first, reference), try Self.difference(last, reference))
            #expect(late < early, "quality rises: \(early) then \(late)")
        }
        let cached = try await fixture.manager.retrieveImage(with: fixture.url("/slow/p?delay=40&chunks=16"))
        #expect(cached.cacheType == .memory)
        #expect(try Self.difference(cached.image, reference) == 0)
    }

    @Test("isFastestScan gives one preview; a baseline JPEG gives none")
    func fastestAndBaseline() async throws {
        let fixture = try await ManagerFixture.make(image: try Self.jpeg(progressive: true))
        defer { Task { await fixture.shutdown() } }
        let (fastest, fastResult) = await Self.retrieve(fixture, "/slow/f?delay=40&chunks=16", isFastestScan: true)
        #expect(fastest.count == 1 && (try? fastResult.get()) != nil)
        let baseline = try await ManagerFixture.make(image: try Self.jpeg(progressive: false))
        defer { Task { await baseline.shutdown() } }
        let (none, baseResult) = await Self.retrieve(baseline, "/slow/b?delay=20&chunks=16", isFastestScan: false)
        #expect(none.isEmpty && (try? baseResult.get()) != nil)
    }

    @Test("Cancelling after the first preview stops the previews and the download")
    func cancel() async throws {
        let fixture = try await ManagerFixture.make(image: try Self.jpeg(progressive: true))
        defer { Task { await fixture.shutdown() } }
        let (previews, result) = await Self.retrieve(fixture, "/slow/c?delay=60&chunks=16", isFastestScan: false, cancelAfterFirst: true,
                                                     cancelAfter: 0.3)
        guard case .failure(let error) = result else { Issue.record("the cancelled retrieval succeeded"); return }
        #expect(error.isTaskCancelled)
        #expect(previews.count == 1)
    }

    @Test("hc.setImage shows the previews on the target, then the final image")
    func onTarget() async throws {
        let fixture = try await ManagerFixture.make(image: try Self.jpeg(progressive: true))
        defer { Task { await fixture.shutdown() } }
        let target = RecordingTarget()
        let settings = ImageProgressive(isBlur: true, isFastestScan: false, scanInterval: 0)
        _ = await awaitResult { done in
            target.hc.setImage(with: fixture.url("/slow/t?delay=40&chunks=16"), options: [.progressiveJPEG(settings), .callbackQueue(.untouch)],
                               manager: fixture.manager, completionHandler: done)
        }
        #expect(target.setCount >= 3, "previews and the final image: \(target.setCount) sets")
        #expect(try Self.difference(try #require(target.image), try ImageDecoder.decode(fixture.server.image)) == 0)
    }
}

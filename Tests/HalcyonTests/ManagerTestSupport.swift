import Dispatch
import Foundation
import Testing
@testable import Halcyon

/// A manager on its own cache folder, downloader and loopback server, for one test.
struct ManagerFixture {
    let server: TestHTTPServer
    let cache: ImageCache
    let downloader: ImageDownloader
    let manager: HalcyonManager
    let folder: URL
    let clock: TestClock

    /// The image the server serves: a 64×48 JPEG gradient.
    static func sampleImage() throws -> Data {
        try TestImages.encodedGradient(.jpeg(quality: 90), width: 64, height: 48)
    }

    static func make(image: Data? = nil) async throws -> ManagerFixture {
        let server = try await TestHTTPServer.start(image: image ?? sampleImage())
        let folder = FileManager.default.temporaryDirectory.appendingPathComponent("halcyon-manager-\(UUID().uuidString)")
        let clock = TestClock()
        let cache = try makeCache(folder: folder, clock: clock)
        let downloader = ImageDownloader(name: "manager-test")
        downloader.downloadTimeout = 5
        let manager = HalcyonManager(downloader: downloader, cache: cache)
        manager.defaultOptions = [.callbackQueue(.untouch)]
        return ManagerFixture(server: server, cache: cache, downloader: downloader, manager: manager, folder: folder, clock: clock)
    }

    /// A second cache in a folder of its own, on the same clock.
    func makeOtherCache(_ name: String) throws -> ImageCache {
        try ManagerFixture.makeCache(folder: folder.appendingPathComponent(name), clock: clock)
    }

    private static func makeCache(folder: URL, clock: TestClock) throws -> ImageCache {
        var diskConfig = DiskStorage.Config(name: "test", sizeLimit: 0, directory: folder)
        diskConfig.trimsInBackground = false
        let disk = try DiskStorage.Backend(config: diskConfig, clock: clock.cacheClock)
        let memory = MemoryStorage.Backend<Image>(config: MemoryStorage.Config(totalCostLimit: 64 * 1024 * 1024), clock: clock.cacheClock)
        return ImageCache(memoryStorage: memory, diskStorage: disk)
    }

    func shutdown() async {
        await downloader.shutdown()
        await server.shutdown()
        try? FileManager.default.removeItem(at: folder)
    }

    func url(_ target: String) -> URL { server.url(target) }
}

/// A processor that counts its runs and records the thread label it ran on.
final class CountingProcessor: ImageProcessor {
    let identifier: String
    private let runs = Locked(0)
    private let delay: TimeInterval

    init(identifier: String = "test.counting", delay: TimeInterval = 0) {
        self.identifier = identifier
        self.delay = delay
    }

    var runCount: Int { runs.withLock { $0 } }

    func process(item: ImageProcessItem, options: HalcyonParsedOptionsInfo) throws(HalcyonError) -> Image {
        runs.withLock { $0 += 1 }
        if delay > 0 { Thread.sleep(forTimeInterval: delay) }
        return try ResizingImageProcessor(referenceSize: CGSize(width: 16, height: 12)).process(item: item, options: options)
    }
}

/// A headless image target that records what Halcyon set on it.
final class RecordingTarget: ImageSettable {
    let halcyonState = ImageSettableState()
    private let record = Locked<(image: Image?, transitions: [ImageTransition], sets: Int)>((nil, [], 0))

    var image: Image? { record.withLock { $0.image } }
    var transitions: [ImageTransition] { record.withLock { $0.transitions } }
    var setCount: Int { record.withLock { $0.sets } }

    func setImage(_ image: Image?, transition: ImageTransition) {
        record.withLock {
            $0.image = image
            $0.transitions.append(transition)
            $0.sets += 1
        }
    }
}

/// Waits for a completion-handler result.
func awaitResult(
    _ start: (@escaping @Sendable (Result<RetrieveImageResult, HalcyonError>) -> Void) -> Void
) async -> Result<RetrieveImageResult, HalcyonError> {
    await withCheckedContinuation { continuation in
        start { continuation.resume(returning: $0) }
    }
}

/// Expects a cancelled retrieval task to end with `requestError(.taskCancelled)` (`.dataProviderCancelled` for a
/// data provider's load, as in Kingfisher), not an image.
func expectCancelled(_ task: Task<RetrieveImageResult, any Error>) async {
    do {
        _ = try await task.value
        Issue.record("a cancelled retrieval returned an image")
    } catch let error as HalcyonError {
        // A data provider's load reports Kingfisher's dataProviderCancelled; any other, taskCancelled.
        if case .requestError(reason: .dataProviderCancelled) = error { return }
        #expect(error.isTaskCancelled, "\(error)")
    } catch {
        Issue.record("a cancelled retrieval threw \(error), not a HalcyonError")
    }
}

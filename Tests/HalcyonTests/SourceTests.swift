import Foundation
import Testing
@testable import Halcyon

@Suite("Source and Resource")
struct SourceTests {
    @Test("a URL is a resource keyed by its absolute string")
    func urlResource() throws {
        let url = try #require(URL(string: "https://example.com/a.png?x=1"))
        #expect(url.cacheKey == "https://example.com/a.png?x=1")
        let source = url.convertToSource()
        guard case .network(let resource) = source else { Issue.record("not network"); return }
        #expect(resource.downloadURL == url)
        #expect(source.cacheKey == url.absoluteString)
        #expect(url.convertToSource(overrideCacheKey: "k").cacheKey == "k")
    }

    @Test("a file URL becomes a local file provider")
    func fileURLBecomesProvider() {
        let url = URL(fileURLWithPath: "/tmp/some/../image.png")
        guard case .provider(let provider) = url.convertToSource() else { Issue.record("not a provider"); return }
        #expect(provider is LocalFileImageDataProvider)
        #expect(provider.cacheKey == "local:///tmp/image.png")
        #expect(provider.contentURL == url)
    }

    @Test("sources compare by key and location")
    func sameSource() throws {
        let url = try #require(URL(string: "https://example.com/a.png"))
        #expect(Source.network(url).isSameSource(as: .network(ImageResource(downloadURL: url))))
        #expect(!Source.network(url).isSameSource(as: .network(ImageResource(downloadURL: url, cacheKey: "other"))))
        #expect(!Source.network(url).isSameSource(as: .provider(RawImageDataProvider(data: Data(), cacheKey: url.absoluteString))))
    }
}

@Suite("ImageDataProvider")
struct ImageDataProviderTests {
    @Test("local file provider reads the file; a missing file is a typed error")
    func localFile() async throws {
        let folder = FileManager.default.temporaryDirectory.appendingPathComponent("halcyon-provider-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: folder) }
        let file = folder.appendingPathComponent("a.png")
        let bytes = try TestImages.encodedGradient(.png(), width: 8, height: 8)
        try bytes.write(to: file)
        #expect(try await LocalFileImageDataProvider(fileURL: file).data() == bytes)
        do {
            _ = try await LocalFileImageDataProvider(fileURL: folder.appendingPathComponent("missing.png")).data()
            Issue.record("read a missing file")
        } catch let error as HalcyonError {
            guard case .imageSettingError(.dataProviderError(let provider, let cause)) = error else { Issue.record("got \(error)"); return }
            #expect((provider as? LocalFileImageDataProvider)?.fileURL.lastPathComponent == "missing.png", "the provider itself is carried")
            #expect((cause as? DataProviderFailure)?.message.contains("missing.png") == true)
        }
    }

    @Test("base64 provider accepts plain and data: URL text, refuses junk")
    func base64() async throws {
        let bytes = try TestImages.encodedGradient(.png(), width: 4, height: 4)
        let plain = Base64ImageDataProvider(base64String: bytes.base64EncodedString(), cacheKey: "b")
        #expect(try await plain.data() == bytes)
        let dataURL = Base64ImageDataProvider(base64String: "data:image/png;base64," + bytes.base64EncodedString(), cacheKey: "b")
        #expect(try await dataURL.data() == bytes)
        await #expect(throws: HalcyonError.self) { try await Base64ImageDataProvider(base64String: "&&&", cacheKey: "x").data() }
    }

    @Test("raw provider hands its bytes over")
    func raw() async throws {
        let bytes = Data([1, 2, 3])
        #expect(try await RawImageDataProvider(data: bytes, cacheKey: "r").data() == bytes)
    }
}

@Suite("DelayRetryStrategy")
struct DelayRetryStrategyTests {
    let source = Source.network(URL(fileURLWithPath: "/x"))
    let responseError = HalcyonError.responseError(reason: .emptyBody(url: URL(fileURLWithPath: "/x")))

    @Test("retries response errors up to the count, then stops")
    func retriesUpToCount() async {
        let strategy = DelayRetryStrategy(maxRetryCount: 2, retryInterval: .seconds(0))
        for count in 0..<2 {
            guard case .retry = await strategy.retry(context: RetryContext(source: source, error: responseError, retriedCount: count)) else {
                Issue.record("stopped at \(count)")
                return
            }
        }
        guard case .stop = await strategy.retry(context: RetryContext(source: source, error: responseError, retriedCount: 2)) else {
            Issue.record("retried past the count")
            return
        }
    }

    @Test("never retries cancellation or non-response errors")
    func stopsOnOtherErrors() async {
        let strategy = DelayRetryStrategy(maxRetryCount: 5, retryInterval: .seconds(0))
        for error in [HalcyonError.requestError(reason: .taskCancelled(task: nil, token: nil)), .processorError(reason: .emptyData)] {
            guard case .stop = await strategy.retry(context: RetryContext(source: source, error: error, retriedCount: 0)) else {
                Issue.record("retried \(error)")
                return
            }
        }
    }

    @Test("intervals: fixed, accumulated, custom; the delay is really waited")
    func intervals() async {
        #expect(DelayRetryStrategy.Interval.seconds(2).timeInterval(for: 5) == 2)
        #expect(DelayRetryStrategy.Interval.accumulated(2).timeInterval(for: 2) == 6)
        #expect(DelayRetryStrategy.Interval.custom { Double($0) * 10 }.timeInterval(for: 3) == 30)
        let strategy = DelayRetryStrategy(maxRetryCount: 1, retryInterval: .seconds(0.2))
        let started = ContinuousClock.now
        _ = await strategy.retry(context: RetryContext(source: source, error: responseError, retriedCount: 0))
        #expect(ContinuousClock.now - started >= .milliseconds(190))
    }
}

@Suite("HalcyonWrapper")
struct HalcyonWrapperTests {
    @Test(".hc on Data sniffs the format; .hc on Image encodes and rescales")
    func namespace() throws {
        let png = try TestImages.encodedGradient(.png(), width: 8, height: 8)
        #expect(png.hc.imageFormat == .png)
        let image = try ImageDecoder.decode(png)
        #expect(try image.hc.data(format: .jpeg, compressionQuality: 0.8).hc.imageFormat == .jpeg)
        #expect(try image.hc.data(format: .heic).hc.imageFormat == .png)
        #expect(image.hc.scaled(to: 2).scale == 2)
    }
}

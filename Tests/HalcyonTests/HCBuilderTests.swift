import Foundation
@testable import Halcyon
import Testing

/// The `HC` builder and `hc.indicatorType`, as a Kingfisher user writes them, against a loopback server.
@Suite("HC builder and indicator types")
struct HCBuilderTests {
    @Test("HC.url(…).placeholder(…).setProcessor(…).retry(…).onSuccess {…}.set(to:) loads, processes and shows the image")
    func builderLoads() async throws {
        let fixture = try await ManagerFixture.make()
        defer { Task { await fixture.shutdown() } }
        let target = RecordingTarget()
        let placeholder = try TestImages.solid(RGBA8(red: 1, green: 2, blue: 3))
        let progressCalls = Locked(0)
        let result = await awaitResult { done in
            HC.url(fixture.url("/image/builder"))
                .placeholder(placeholder)
                .setProcessor(ResizingImageProcessor(referenceSize: CGSize(width: 16, height: 16)))
                .appendProcessor(BlackWhiteProcessor())
                .retry(maxCount: 2, interval: .seconds(0.01))
                .fade(duration: 0.2)
                .manager(fixture.manager)
                .onProgress { _, _ in progressCalls.withLock { $0 += 1 } }
                .onSuccess { done(.success($0)) }
                .onFailure { done(.failure($0)) }
                .set(to: target)
        }
        let value = try result.get()
        #expect(value.image.width == 16 && target.image?.width == 16)
        let pixel = try value.image.pixel(x: 8, y: 8)
        #expect(pixel.red == pixel.green && pixel.green == pixel.blue, "the appended black-and-white step ran")
        #expect(target.transitions.last == .fade(0.2))
        #expect(progressCalls.withLock { $0 } > 0)
    }

    @Test("The builder's retry and failure callback: a failing source retries, then onFailure gets the error")
    func builderFails() async throws {
        let fixture = try await ManagerFixture.make()
        defer { Task { await fixture.shutdown() } }
        let target = RecordingTarget()
        let result = await awaitResult { done in
            HC.url(fixture.url("/status/500")).retry(maxCount: 2, interval: .seconds(0.01)).manager(fixture.manager)
                .onSuccess { done(.success($0)) }.onFailure { done(.failure($0)) }.set(to: target)
        }
        guard case .failure(let error) = result else { Issue.record("a 500 succeeded"); return }
        #expect(error.isInvalidResponseStatusCode(500))
        #expect(fixture.server.hits("/status/500") == 3, "one try and two retries")
    }

    @Test("indicatorType makes the indicator: activity animates while loading, image carries its image, none removes it")
    func indicatorTypes() async throws {
        let fixture = try await ManagerFixture.make()
        defer { Task { await fixture.shutdown() } }
        let target = RecordingTarget()
        target.hc.indicatorType = .activity
        let activity = try #require(target.hc.indicator as? ActivityIndicator)
        _ = await awaitResult { done in
            target.hc.setImage(with: fixture.url("/slow/indicator?delay=10&chunks=3"), manager: fixture.manager, completionHandler: done)
        }
        #expect(activity.startCount == 1 && !activity.isAnimating)
        #expect(activity.progress.received == Int64(fixture.server.image.count))
        target.hc.indicatorType = .image(imageData: try TestImages.animation(frames: 3).encoded(as: .gif))
        let imageIndicator = try #require(target.hc.indicator as? ImageIndicator)
        #expect(imageIndicator.image?.frameCount == 3)
        let custom = CountingIndicator()
        target.hc.indicatorType = .custom(indicator: custom)
        #expect(target.hc.indicator as? CountingIndicator === custom)
        target.hc.indicatorType = .none
        #expect(target.hc.indicator == nil)
    }
}

import Foundation
@testable import Halcyon
import Testing

/// A processor that decodes, then fails in its own step the way an engine failure does.
struct FailingTintProcessor: ImageProcessor {
    let identifier = "test.tint(no-palette)"

    func process(item: ImageProcessItem, options: HalcyonParsedOptionsInfo) throws(HalcyonError) -> Image {
        _ = try decodedImage(item, options: options)
        throw .processorError(reason: .operationFailed(operation: "tint", message: "the palette is empty"))
    }
}

/// Kingfisher's error payloads: `taskCancelled(task:token:)` and `processingFailed(processor:item:)`,
/// against a loopback server.
@Suite("Kingfisher API: error payloads")
struct KingfisherErrorPayloadTests {
    @Test("a cancelled caller's error carries the coalesced data task and its own token")
    func cancelCarriesTaskAndToken() async throws {
        let server = try await TestHTTPServer.start(image: try ManagerFixture.sampleImage())
        let downloader = ImageDownloader(name: "payloads")
        defer { Task { await downloader.shutdown(); await server.shutdown() } }
        let url = server.url("/hang/payload")
        let first = ResultBox(), second = ResultBox()
        let firstTask = downloader.downloadImage(with: url, options: .default) { first.set($0) }
        let secondTask = downloader.downloadImage(with: url, options: .default) { second.set($0) }
        #expect(await server.wait { server.inFlight == 1 })
        let shared = try #require(firstTask?.sessionTask)
        #expect(secondTask?.sessionTask === shared)
        let firstToken = try #require(firstTask?.cancelToken), secondToken = try #require(secondTask?.cancelToken)
        firstTask?.cancel()
        guard case .failure(.requestError(.taskCancelled(let task?, let token?))) = await first.value() else {
            Issue.record("the first caller must get taskCancelled with its task and token")
            return
        }
        #expect(task === shared && token == firstToken && task.url == url)
        shared.cancelAll()
        guard case .failure(.requestError(.taskCancelled(let task?, let token?))) = await second.value() else {
            Issue.record("cancelAll must hand each caller its own token")
            return
        }
        #expect(task === shared && token == secondToken && token != firstToken)
    }

    @Test("Swift task cancellation has no data task to report")
    func swiftCancelHasNoTask() async throws {
        let fixture = try await ManagerFixture.make()
        defer { Task { await fixture.shutdown() } }
        let retrieval = Task { try await fixture.manager.retrieveImage(with: fixture.url("/hang/swift"), options: [.forceRefresh]) }
        #expect(await fixture.server.wait { fixture.server.inFlight == 1 })
        retrieval.cancel()
        do {
            _ = try await retrieval.value
            Issue.record("a cancelled retrieval must throw")
        } catch let error as HalcyonError {
            guard case .requestError(.taskCancelled(let task, let token)) = error else {
                Issue.record("expected taskCancelled, got \(error)")
                return
            }
            #expect(error.isTaskCancelled)
            #expect(token == nil || task != nil, "a token always comes with its task")
        }
    }

    @Test("a processor's failure reaches retrieveImage and the downloader as processingFailed(processor:item:)")
    func processorFailureCarriesProcessorAndItem() async throws {
        let fixture = try await ManagerFixture.make()
        defer { Task { await fixture.shutdown() } }
        let processor = FailingTintProcessor()
        do {
            _ = try await fixture.manager.retrieveImage(with: fixture.url("/image/tint"), options: [.processor(processor)])
            Issue.record("the retrieval must fail")
        } catch let error as HalcyonError {
            guard case .processorError(.processingFailed(let failed, .data(let bytes))) = error else {
                Issue.record("expected processingFailed(processor:item: .data), got \(error)")
                return
            }
            #expect(failed.identifier == processor.identifier)
            #expect(bytes == fixture.server.image, "the item is the downloaded bytes")
            #expect("\(error)".contains(processor.identifier))
        }
        var options = DownloadOptions()
        options.processor = processor
        do {
            _ = try await fixture.downloader.downloadImage(with: fixture.url("/image/tint-downloader"), options: options)
            Issue.record("the download must fail")
        } catch let error as HalcyonError {
            guard case .processorError(.processingFailed(let failed, .data)) = error else {
                Issue.record("expected processingFailed from the downloader, got \(error)")
                return
            }
            #expect(failed.identifier == processor.identifier)
        }
        // Called directly, the processor's own words stay available.
        #expect(throws: HalcyonError.self) { try processor.process(item: .data(fixture.server.image), options: HalcyonParsedOptionsInfo(nil)) }
        do {
            _ = try processor.process(item: .data(fixture.server.image), options: HalcyonParsedOptionsInfo(nil))
        } catch {
            guard case .processorError(.operationFailed("tint", let message)) = error else {
                Issue.record("direct call: \(error)")
                return
            }
            #expect(message == "the palette is empty")
        }
    }

    @Test("limits and corrupt data keep their own reasons through the pipeline")
    func typedReasonsPassThrough() async throws {
        let fixture = try await ManagerFixture.make(image: Data("not an image at all".utf8))
        defer { Task { await fixture.shutdown() } }
        do {
            _ = try await fixture.manager.retrieveImage(with: fixture.url("/image/text"), options: [.processor(FailingTintProcessor())])
            Issue.record("the retrieval must fail")
        } catch let error as HalcyonError {
            guard case .processorError(.unsupportedFormat) = error else {
                Issue.record("undecodable data must stay unsupportedFormat, got \(error)")
                return
            }
        }
    }
}

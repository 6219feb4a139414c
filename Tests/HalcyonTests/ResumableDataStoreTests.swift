import Foundation
import Testing
@testable import Halcyon

/// Which partial bodies are kept for resuming, and for how long.
@Suite struct ResumableDataStoreTests {
    let url = URL(string: "http://example.com/a.png")!

    func response(status: Int = 200, _ headers: [String: String]) -> ImageDownloadResponse {
        ImageDownloadResponse(url: url, statusCode: status, headers: headers)
    }

    @Test func strongETagWithByteRangesIsAValidator() {
        #expect(ResumableDataStore.validator(for: response(["Accept-Ranges": "bytes", "ETag": "\"x\""])) == "\"x\"")
    }

    @Test func lastModifiedIsUsedWhenTheETagIsWeak() {
        let headers = ["Accept-Ranges": "bytes", "ETag": "W/\"x\"", "Last-Modified": "Wed, 21 Oct 2015 07:28:00 GMT"]
        #expect(ResumableDataStore.validator(for: response(headers)) == "Wed, 21 Oct 2015 07:28:00 GMT")
    }

    @Test func noByteRangesOrNoValidatorMeansNoResume() {
        #expect(ResumableDataStore.validator(for: response(["ETag": "\"x\""])) == nil)
        #expect(ResumableDataStore.validator(for: response(["Accept-Ranges": "none", "ETag": "\"x\""])) == nil)
        #expect(ResumableDataStore.validator(for: response(["Accept-Ranges": "bytes", "ETag": "W/\"x\""])) == nil)
        #expect(ResumableDataStore.validator(for: response(status: 500, ["Accept-Ranges": "bytes", "ETag": "\"x\""])) == nil)
    }

    @Test func takeRemovesTheEntry() {
        let store = ResumableDataStore()
        store.store(.init(data: Data([1, 2, 3]), validator: "v"), for: url)
        #expect(store.take(url)?.data == Data([1, 2, 3]))
        #expect(store.take(url) == nil)
    }

    @Test func oldestEntriesAreEvictedBeyondTheLimits() {
        let store = ResumableDataStore(maxEntries: 2, maxBytes: 10)
        let urls = (0..<3).map { URL(string: "http://example.com/\($0)")! }
        for url in urls { store.store(.init(data: Data([1, 2, 3]), validator: "v"), for: url) }
        #expect(!store.contains(urls[0]))
        #expect(store.contains(urls[1]) && store.contains(urls[2]))
        store.store(.init(data: Data(count: 9), validator: "v"), for: urls[0])
        #expect(store.contains(urls[0]))
        #expect(!store.contains(urls[1]) && !store.contains(urls[2]))
        store.store(.init(data: Data(count: 11), validator: "v"), for: urls[1])
        #expect(!store.contains(urls[1]))
    }
}

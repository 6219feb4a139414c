import AsyncHTTPClient
import Foundation
@testable import Halcyon
import Testing

/// A gate that sends every hop to one loopback server, keeping the path, and records what it was asked.
private final class RewritingGate: ImageDownloaderConnectionGate {
    let port: Int
    let asked = Locked<[URL]>([])

    init(port: Int) { self.port = port }

    func connection(for url: URL) async throws(HalcyonError) -> ImageDownloaderConnection {
        asked.withLock { $0.append(url) }
        guard var components = URLComponents(url: url, resolvingAgainstBaseURL: false) else {
            throw .requestError(reason: .invalidURL(url: url))
        }
        components.host = "127.0.0.1"
        components.port = port
        guard let target = components.url else { throw .requestError(reason: .invalidURL(url: url)) }
        return ImageDownloaderConnection(client: nil, url: target)
    }
}

@Suite("Image downloader connection gate")
struct ConnectionGateTests {
    @Test("Each hop is sent to the URL the gate returns, redirects resolved against it")
    func gateURLIsSent() async throws {
        let upstream = try await TestHTTPServer.start(image: ManagerFixture.sampleImage())
        let gate = RewritingGate(port: upstream.port)
        let downloader = ImageDownloader(name: "gate-contract")
        downloader.connectionGate = gate
        let result = try await downloader.downloadData(with: URL(string: "http://elsewhere.invalid/redirect/2")!)
        #expect(result.data == upstream.image)
        #expect(upstream.hits("/redirect/2") == 1 && upstream.hits("/redirect/1") == 1 && upstream.hits("/redirect/0") == 1)
        #expect(gate.asked.withLock { $0.count } == 3, "the gate sees every hop")
        #expect(upstream.headers("/redirect/2").first?["host"] == "127.0.0.1:\(upstream.port)")
        await downloader.shutdown()
        await upstream.shutdown()
    }
}

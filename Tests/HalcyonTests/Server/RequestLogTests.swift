import Foundation
@testable import HalcyonServer
import Testing

/// The request log line's figures.
@Suite("Server: request log")
struct RequestLogTests {
    @Test("Milliseconds are written with one decimal, as %.1f writes them (exact halves aside), never negative")
    func milliseconds() {
        var generator = SystemRandomNumberGenerator()
        let nanoseconds: [Int64] = [0, 1, 49_999, 50_001, 999_999, 1_000_000, 99_960_000, 123_456_789_012]
            + (0..<2_000).map { _ in Int64(generator.next() % 200_000_000_000) }
        for value in nanoseconds where value % 100_000 != 50_000 {
            let expected = String(format: "%.1f", Double(value) / 1e6)
            #expect(RequestLogMiddleware.milliseconds(.nanoseconds(value)) == expected, "\(value) ns")
        }
        #expect(RequestLogMiddleware.milliseconds(.seconds(2) + .microseconds(40)) == "2000.0")
        #expect(RequestLogMiddleware.milliseconds(.zero - .milliseconds(3)) == "0.0")
    }
}

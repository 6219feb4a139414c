import Foundation
@testable import HalcyonServer
import Testing

/// Reading HTTP dates for `If-Modified-Since`: the three forms RFC 9110 has recipients accept, nothing else.
@Suite("Server: HTTP dates")
struct HTTPDateTests {
    @Test("Every written date reads back; the RFC 9110 example reads the same in all three forms")
    func roundTrip() {
        var generator = SystemRandomNumberGenerator()
        let seconds = [0, 68_256_000, 951_782_400, 1_709_164_799, HTTPDate.latest]
            + (0..<500).map { _ in Int(generator.next() % UInt64(HTTPDate.latest)) }
        for value in seconds {
            #expect(HTTPDate.parse(HTTPDate.format(value)) == value, "\(value): \(HTTPDate.format(value))")
        }
        let example = 784_111_777
        let now = Date(timeIntervalSince1970: 1_795_000_000)
        #expect(HTTPDate.parse("Sun, 06 Nov 1994 08:49:37 GMT") == example)
        #expect(HTTPDate.parse("Sunday, 06-Nov-94 08:49:37 GMT", now: Date(timeIntervalSince1970: 800_000_000)) == example)
        #expect(HTTPDate.parse("Sun Nov  6 08:49:37 1994") == example)
        // A two-digit year more than 50 years ahead is the century before.
        #expect(HTTPDate.parse("Sunday, 06-Nov-94 08:49:37 GMT", now: now) == example)
        #expect(HTTPDate.parse("Thursday, 06-Nov-70 08:49:37 GMT", now: now) == HTTPDate.parse("Thu, 06 Nov 2070 08:49:37 GMT"))
        // From 2050 on, low digits are in the next century: in 2070, 05 is 2105 and 21 is 2021.
        let later = Date(timeIntervalSince1970: 3_155_760_000)
        #expect(HTTPDate.parse("Friday, 06-Nov-05 08:49:37 GMT", now: later) == HTTPDate.parse("Fri, 06 Nov 2105 08:49:37 GMT"))
        #expect(HTTPDate.parse("Saturday, 06-Nov-21 08:49:37 GMT", now: later) == HTTPDate.parse("Sat, 06 Nov 2021 08:49:37 GMT"))
    }

    @Test("Anything else is not a date: nonexistent days and times, other zones, other shapes")
    func invalid() {
        let texts = [
            "", "yesterday", "Sun, 06 Nov 1994 08:49:37", "Sun, 06 Nov 1994 08:49:37 UTC", "Sun, 06 Nov 1994 08:49:37 +0000",
            "Fri, 29 Feb 2019 00:00:00 GMT", "Mon, 31 Apr 2026 00:00:00 GMT", "Mon, 32 Nov 2026 10:00:00 GMT",
            "Mon, 00 Nov 2026 10:00:00 GMT", "Sun, 06 Nov 1994 24:00:00 GMT", "Sun, 06 Nov 1994 08:60:00 GMT",
            "Sun, 06 Nov 1994 8:49:37 GMT", "Sun, 06 Nov 94 08:49:37 GMT", "Sun, 06 nov 1994 08:49:37 GMT",
            "Xyz, 06 Nov 1994 08:49:37 GMT", "Sun, 06 Nov 1994 08:49:37 GMT, Mon, 07 Nov 1994 08:49:37 GMT",
            "Sun, +6 Nov 1994 08:49:37 GMT", "Sunday, 06-Nov-1994 08:49:37 GMT", "Sun Nov 6 08:49:37 94",
            "1994-11-06T08:49:37Z", "784111777",
        ]
        for text in texts { #expect(HTTPDate.parse(text) == nil, "\(text)") }
        #expect(HTTPDate.parse("Tue, 29 Feb 2000 23:59:60 GMT") == HTTPDate.parse("Tue, 29 Feb 2000 23:59:59 GMT"))
    }
}

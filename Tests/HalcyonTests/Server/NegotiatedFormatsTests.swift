import Halcyon
@testable import HalcyonServer
import Testing

/// The remembered `Accept` negotiation behind the response cache's key.
@Suite("Server: remembered Accept negotiation")
struct NegotiatedFormatsTests {
    @Test("Gives what the policy negotiates, asked once or again; remembers a bounded number of short headers")
    func sameAnswersBounded() {
        let policy = OutputEncodingPolicy.default
        let formats = NegotiatedFormats(policy: policy)
        let headers = ["image/avif,image/webp,image/apng,image/svg+xml,image/*,*/*;q=0.8", "image/webp,*/*", "image/avif;q=0, image/webp",
                       "IMAGE/WEBP", "*/*", "image/png", "text/html"]
        for header in headers + headers {
            #expect(formats.format(accepting: header) == policy.negotiatedFormat(accepting: header), "\(header)")
        }
        #expect(formats.format(accepting: nil) == nil)
        #expect(formats.count == headers.count)
        for variant in 0..<1_000 { _ = formats.format(accepting: "image/webp;v=\(variant)") }
        #expect(formats.count <= NegotiatedFormats.capacity)
        let long = "image/webp;" + String(repeating: "x", count: NegotiatedFormats.longestHeader)
        let before = formats.count
        #expect(formats.format(accepting: long) == policy.negotiatedFormat(accepting: long))
        #expect(formats.count == before, "a header over \(NegotiatedFormats.longestHeader) bytes is not remembered")
    }
}

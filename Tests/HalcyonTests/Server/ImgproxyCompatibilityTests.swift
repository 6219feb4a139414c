import Foundation
import Halcyon
@testable import HalcyonServer
import Testing

/// imgproxy-style URLs written from the examples and rules of imgproxy's processing documentation,
/// each served from a 600×400 JPEG and checked against the size those rules give.
@Suite("imgproxy compatibility")
struct ImgproxyCompatibilityTests {
    /// Options, the expected width and height for a 600×400 source, and the rule that gives it.
    static let cases: [(options: String, width: Int, height: Int, rule: String)] = [
        ("rs:fill:300:400:0/g:sm", 300, 400, "the processing page's example URL: fill, not enlarged, smart gravity"),
        ("rs:fit:300:300", 300, 200, "fit keeps the aspect ratio inside the box"),
        ("rs:fit:300:300:true", 300, 200, "enlarge does not matter when shrinking"),
        ("rs:fill:300:300", 300, 300, "fill covers the box and crops"),
        ("rs:force:300:300", 300, 300, "force ignores the aspect ratio"),
        ("rs:fit:1200:1200:1", 1200, 800, "enlarge lets fit scale up"),
        ("rs:fit:1200:1200:0", 600, 400, "without enlarge the source size is the limit"),
        ("rs:fit:1200:1200:0:1", 1200, 1200, "extend fills the box around the unenlarged image"),
        ("s:150:150", 150, 100, "size with the default resizing type, fit"),
        ("w:150", 150, 100, "one side: the other follows the aspect ratio"),
        ("h:100", 150, 100, "one side: the other follows the aspect ratio"),
        ("rt:fill/w:200/h:200", 200, 200, "resizing type, width and height as separate options"),
        ("rs:fill-down:800:800", 400, 400, "fill-down crops to the box's aspect ratio instead of enlarging"),
        ("rs:auto:200:100", 200, 100, "auto: same orientation, so fill"),
        ("rs:auto:100:200", 100, 67, "auto: different orientation, so fit"),
        ("z:0.5", 300, 200, "zoom without a size scales the source"),
        ("rs:fit:300:300/z:2", 600, 400, "zoom multiplies the box"),
        ("dpr:2/rs:fit:150:150", 300, 200, "dpr multiplies the box"),
        ("rs:fit:100:100/mw:200", 100, 100, "min-width raises the result; with a width set it is then cropped to it"),
        ("rs:fit:100:100/mh:200", 100, 100, "min-height raises the result; with a height set it is then cropped to it"),
        ("mw:300", 600, 400, "min-width below the source changes nothing"),
        ("h:100/mw:300", 300, 100, "min-width raises a one-side fit, the height crops it"),
        ("c:300:200", 300, 200, "crop before resize, centred"),
        ("c:300:200:nowe/rs:fit:150:150", 150, 100, "the crop is resized"),
        ("c:0.5:0.5", 300, 200, "crop sides below 1 are fractions"),
        ("pd:10", 620, 420, "padding on all sides"),
        ("pd:10:20", 640, 420, "padding top-bottom and left-right"),
        ("rs:fit:300:300/pd:10:20:30:40", 360, 240, "padding in CSS order after the resize"),
        ("rs:fit:300:300/ex:1:ce", 300, 300, "extend to the box at a gravity"),
        ("rs:fit:300:300/exar:1", 300, 300, "extend to the box's aspect ratio"),
        ("rot:90", 400, 600, "rotate turns the sides"),
        ("rot:90/rs:fill:300:200", 300, 200, "the result has the asked size after a turn"),
        ("fl:1:0/rs:fit:200:200", 200, 133, "flip keeps the size"),
        ("g:fp:0.5:0.5/rs:fill:200:200", 200, 200, "a focus point places the fill crop"),
        ("rs:fill:200:200/g:we:10:0", 200, 200, "gravity offsets move the crop"),
        ("el:1/rs:fit:1200:0", 1200, 800, "enlarge as its own option"),
        ("bl:2/sh:0.7/pix:5", 600, 400, "filters keep the size"),
        ("f:webp/q:75", 600, 400, "format and quality keep the size"),
    ]

    @Test("Every documented example gives the documented size")
    func documentedSizes() async throws {
        let source = try TestImages.encodedGradient(.jpeg(quality: 85), width: 600, height: 400)
        let fixture = try await ServerFixture.start(image: source)
        defer { Task { await fixture.stop() } }
        #expect(Self.cases.count >= 30)
        for (index, entry) in Self.cases.enumerated() {
            let reply = try await fixture.get(fixture.signedPath(entry.options, source: fixture.source("/image/\(index)"), ext: "png"))
            guard reply.status == 200 else {
                Issue.record("\(entry.options): \(reply.status) \(reply.errorMessage ?? "")")
                continue
            }
            let image = try ImageDecoder.decode(reply.body)
            #expect(image.width == entry.width && image.height == entry.height,
                    "\(entry.options) (\(entry.rule)): \(image.width)x\(image.height), expected \(entry.width)x\(entry.height)")
        }
        await fixture.stop()
    }
}

import Foundation
import Testing
@testable import Halcyon

@Suite("ProcessorChainParser")
struct ProcessorChainParserTests {
    @Test("parses the documented steps into the library's processors")
    func parsesChain() throws {
        let chain = "resize(300x200,fill)|>round(12)|>blur(2)|>tint(#ff000080)|>bw|>crop(100x100,center)|>downsample(300x300)|>color(b=0.1,c=1.2,s=0.8)|>border(2,#000)"
        let processor = try ProcessorChainParser.parse(chain)
        let expected: [any ImageProcessor] = [
            ResizingImageProcessor(referenceSize: CGSize(width: 300, height: 200), mode: .aspectFill),
            RoundCornerImageProcessor(cornerRadius: 12),
            BlurImageProcessor(blurRadius: 2),
            TintImageProcessor(tint: Color(red: 1, green: 0, blue: 0, alpha: 128.0 / 255)),
            BlackWhiteProcessor(),
            CroppingImageProcessor(size: CGSize(width: 100, height: 100)),
            DownsamplingImageProcessor(size: CGSize(width: 300, height: 300)),
            ColorControlsProcessor(brightness: 0.1, contrast: 1.2, saturation: 0.8, inputEV: 0),
            BorderImageProcessor(border: Border(color: .black, lineWidth: 2)),
        ]
        #expect(processor.identifier == expected.map(\.identifier).joined(separator: "|>"))
        let result = try processor.process(item: .image(TestImages.gradient(width: 600, height: 300)), options: defaultOptions)
        #expect(result.width == 100 && result.height == 100)
    }

    @Test("empty chain is the default processor; spaces are allowed")
    func emptyAndSpaces() throws {
        #expect(try ProcessorChainParser.parse("").identifier == "")
        #expect(try ProcessorChainParser.parse(" blur( 2 ) |> bw ").identifier == "halcyon.blur(2)|>halcyon.blackWhite")
        #expect(try ProcessorChainParser.parse("round(50%)").identifier == RoundCornerImageProcessor(radius: .widthFraction(0.5)).identifier)
    }

    @Test("a bad chain points at the bad token", arguments: [
        ("resize(300x200,fill)|>spin(3)", 22, "unknown step"),
        ("blur(two)", 5, "not a number"),
        ("resize(300x,fill)", 7, "not a number"),
        ("resize(300x200,stretch)", 15, "fit, fill or force"),
        ("tint(#ff00zz)", 5, "colour"),
        ("bw|>|>blur(1)", 4, "empty step"),
        ("blur(1", 4, "missing"),
        ("crop(10x10,middle)", 11, "anchor"),
        ("bw(1)", 0, "takes 0 arguments"),
        ("color(q=1)", 6, "expected b="),
    ])
    func badChains(chain: String, position: Int, message: String) {
        do {
            _ = try ProcessorChainParser.parse(chain)
            Issue.record("parsed \(chain)")
        } catch {
            guard case .invalidProcessorChain(let badChain, let badPosition, let text) = processorReason(error) else {
                Issue.record("got \(error)")
                return
            }
            #expect(badChain == chain)
            #expect(badPosition == position, "\(text)")
            #expect(text.contains(message), "\(text)")
        }
    }
}

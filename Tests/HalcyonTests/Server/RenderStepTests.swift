import Foundation
import Halcyon
@testable import HalcyonServer
import Testing

/// The service's render steps: one list in imgproxy's order, built from the request's plan, with no step for an
/// option that draws nothing.
@Suite("Render steps: one list in imgproxy's order")
struct RenderStepTests {
    /// The list the service renders a request's plan with: pixel steps for the processor, output steps for the encode.
    static func steps(_ segments: [String], _ fixture: PlanFixture) throws -> [RenderStep] {
        let plan = try fixture.plan(segments)
        return plan.options.renderSteps(watermark: fixture.server.server.service.watermark)
    }

    @Test("Every step asked (options written in reverse) gives every step once, in imgproxy's order, and renders")
    func everyStep() async throws {
        let fixture = try await PlanFixture.shared()
        let segments = [
            "mb:5000", "q:70", "sm:1", "wm:0.5:no:1:2", "bg:0000ff", "pd:2", "rd:4", "tint:ff0000", "bw", "pix:2", "sh:1", "bl:1",
            "ex:1", "rs:fill:30:20", "c:40:30", "fl:1:0", "rot:90", "t:10", "ar:0", "dpr:2",
        ]
        let steps = try Self.steps(segments, fixture)
        #expect(steps.map(\.name) == [
            "orientation", "trim", "rotateFlip", "crop", "resize", "fillCrop", "extend",
            "blur", "sharpen", "pixelate", "blackWhite", "tint", "roundCorners",
            "padding", "background", "watermark", "metadata", "encode",
        ])
        #expect(steps.pixelSteps + steps.outputSteps == steps, "splitting keeps the order")
        #expect(steps.outputSteps.map(\.name) == ["metadata", "encode"])
        // Sizes the plan scales by the pixel ratio are in the step's value.
        #expect(steps.contains(.padding(ProcessingOptions.Insets(top: 4, right: 4, bottom: 4, left: 4),
                                        color: Color(red: 0, green: 0, blue: 1, alpha: 1))))
        #expect(steps.contains { if case .watermark(let mark) = $0 { mark.x == 2 && mark.y == 4 } else { false } })
        let reply = try await fixture.answer(segments)
        #expect(reply.status == 200, "\(reply.errorCode ?? "")")
        let image = try Image(data: reply.body)
        #expect((image.width, image.height) == (68, 48),
                "the crop (40x30, not enlarged) extended to the box times dpr (60x40), then 4 of padding each side")
    }

    @Test("Options that draw nothing add no step, and leave no processor")
    func nothingDrawn() async throws {
        let fixture = try await PlanFixture.shared()
        let plain = try Self.steps([], fixture)
        #expect(plain.map(\.name) == ["metadata", "encode"])
        let service = fixture.server.server.service
        for noOp in ["bl:0", "sh:0", "rd:0", "pix:1", "wm:0", "rot:360", "fl:0:0", "pd:0", "ex:1", "ar:1", "z:1"] {
            let segments = noOp.split(separator: "/").map(String.init)
            let steps = try Self.steps(segments, fixture)
            #expect(steps == plain, "\(noOp): \(steps.map(\.name))")
            let options = try fixture.plan(segments).options
            #expect(options.processor(limits: ImageDecodingOptions(), watermark: service.watermark, identifier: "test") == nil, "\(noOp)")
        }
        #expect(try Self.steps(["sm:0"], fixture).map(\.name) == ["encode"], "no metadata step when metadata is kept")
        #expect(try Self.steps(["bl:0", "sh:2"], fixture).map(\.name) == ["sharpen", "metadata", "encode"])
        #expect(try Self.steps(["rs:force:30:20"], fixture).map(\.name) == ["resize", "metadata", "encode"], "force cuts nothing")
        #expect(try Self.steps(["rs:fit:30:20"], fixture).map(\.name) == ["resize", "metadata", "encode"], "fit stays inside the box")
        #expect(try Self.steps(["rs:fit:30:20", "mw:50"], fixture).map(\.name) == ["resize", "fillCrop", "metadata", "encode"])
        #expect(try Self.steps(["exar:1", "w:30"], fixture) == Self.steps(["w:30"], fixture), "exar needs a width and a height")
    }

    @Test("The render decodes from a handed header only when it was opened from the very bytes it is given")
    func handedHeader() throws {
        let wide = try TestImages.encodedGradient(.png(), width: 80, height: 40)
        let tall = try TestImages.solid(RGBA8(red: 0, green: 0, blue: 255), width: 30, height: 90).encoded(as: .png())
        var options = ProcessingOptions()
        (options.resizeMode, options.width, options.height) = (.fit, 20, 20)
        let render = { (opened: ImageDecoder.OpenedImage?, bytes: Data) throws -> Image in
            let processor = try #require(options.processor(limits: ImageDecodingOptions(), identifier: "test", opened: opened))
            return try processor.process(item: .data(bytes), options: HalcyonParsedOptionsInfo([]))
        }
        let plain = try render(nil, wide)
        let handed = try render(ImageDecoder.open(wide), wide)
        #expect((handed.width, handed.height) == (20, 10) && (plain.width, plain.height) == (20, 10))
        #expect(try handed.encoded(as: .png()) == plain.encoded(as: .png()), "the same pixels from the handed header")
        // A header of other bytes, or of an equal copy in other storage, is not used: the bytes given are decoded.
        let other = try render(ImageDecoder.open(wide), tall)
        #expect((other.width, other.height) == (7, 20), "the tall source, not the wide header's")
        #expect(try ImageDecoder.open(wide).opens(Data(Array(wide)), options: ImageDecodingOptions()) == false)
        #expect(try ImageDecoder.open(wide).opens(wide, options: ImageDecodingOptions()))
    }
}

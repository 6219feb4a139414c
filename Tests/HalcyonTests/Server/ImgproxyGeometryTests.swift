import Foundation
@testable import Halcyon
@testable import HalcyonServer
import Testing

/// imgproxy's geometry options (min sizes, extend, crop, gravity offsets and focus point, trim, auto-rotate),
/// each checked on the output's size and on pixels at known spots of a known source.
@Suite("imgproxy geometry")
struct ImgproxyGeometryTests {
    /// A 300×200 PNG gradient: red rises left to right (0 → 255), green top to bottom.
    static func start() async throws -> ServerFixture {
        try await ServerFixture.start(image: TestImages.encodedGradient(.png(), width: 300, height: 200)) { $0.maxResultDimension = 2000 }
    }

    static func image(_ fixture: ServerFixture, _ options: String, file: String? = nil) async throws -> Image {
        let path = file.map { "/files/\($0)" } ?? "/image/\(UUID().uuidString)"
        let reply = try await fixture.get(fixture.signedPath(options, source: fixture.source(path), ext: "png"))
        guard reply.status == 200 else { throw ServerError(status: reply.status, code: reply.errorCode ?? "", message: reply.errorMessage ?? "") }
        return try ImageDecoder.decode(reply.body)
    }

    static func size(_ fixture: ServerFixture, _ options: String) async throws -> (Int, Int) {
        let image = try await image(fixture, options)
        return (image.width, image.height)
    }

    @Test("mw and mh raise the result to the minimum side (enlarging only with el); a width or height given too crops it")
    func minimumSides() async throws {
        let fixture = try await Self.start()
        defer { Task { await fixture.stop() } }
        #expect(try await Self.size(fixture, "h:50/mw:200") == (200, 50), "raised to 200×133 for the minimum width, then cropped to the height")
        #expect(try await Self.size(fixture, "mw:600") == (300, 200), "not past the source without el")
        #expect(try await Self.size(fixture, "mw:600/el:1") == (600, 400))
        #expect(try await Self.size(fixture, "rs:fit:100:100/mh:100") == (100, 100), "raised to 150×100, then cropped to the width")
        let cropped = try await Self.image(fixture, "w:60/mw:150/g:ea")
        #expect((cropped.width, cropped.height) == (60, 100))
        #expect(try cropped.pixel(x: 59, y: 50).red > 245, "the crop to the width follows the gravity")
        await fixture.stop()
    }

    @Test("ex places a small result on a canvas of the box at the gravity; exar grows it to the box's aspect ratio")
    func extend() async throws {
        let fixture = try await Self.start()
        defer { Task { await fixture.stop() } }
        let centred = try await Self.image(fixture, "rs:fit:400:400/ex:1")
        #expect((centred.width, centred.height) == (400, 400))
        #expect(try centred.pixel(x: 200, y: 20).alpha == 0)
        #expect(try centred.pixel(x: 200, y: 200).alpha == 255)
        let top = try await Self.image(fixture, "rs:fit:400:400/ex:1:no/bg:ff0000")
        #expect(abs(Int(try top.pixel(x: 200, y: 20).blue) - 100) < 8, "the image starts at the top")
        let below = try top.pixel(x: 200, y: 350)
        #expect(below.red == 255 && below.green == 0 && below.blue == 0, "the canvas is the background colour")
        #expect(try await Self.size(fixture, "rs:fit:400:400:0:1") == (400, 400), "rs's fifth argument extends")
        #expect(try await Self.size(fixture, "s:400:300:0:1") == (400, 300), "s's fourth argument extends")
        #expect(try await Self.size(fixture, "rs:fit:100:100/exar:1") == (100, 100))
        #expect(try await Self.size(fixture, "rs:fit:100:50/extend_aspect_ratio:1") == (100, 50), "75×50 grown to 2:1")
        await fixture.stop()
    }

    @Test("c crops the source before the resize, at its own gravity or the request's; fractions take part of a side")
    func crop() async throws {
        let fixture = try await Self.start()
        defer { Task { await fixture.stop() } }
        let centre = try await Self.image(fixture, "c:150:100")
        #expect((centre.width, centre.height) == (150, 100))
        #expect(abs(Int(try centre.pixel(x: 75, y: 50).red) - 128) < 8, "the centre of the source")
        let west = try await Self.image(fixture, "c:150:100:we")
        #expect(try west.pixel(x: 0, y: 50).red < 8, "the left edge of the source")
        let east = try await Self.image(fixture, "crop:150:100/g:ea")
        #expect(try east.pixel(x: 149, y: 50).red > 247, "the request's gravity when the crop has none")
        #expect(try await Self.size(fixture, "c:0.5:0.25") == (150, 50))
        #expect(try await Self.size(fixture, "c:150:100/w:75") == (75, 50), "the resize is of the cropped part")
        let shifted = try await Self.image(fixture, "c:100:100:we:50:0")
        #expect(abs(Int(try shifted.pixel(x: 0, y: 50).red) - 43) < 8, "the offset moves the crop 50 pixels in from the west edge")
        await fixture.stop()
    }

    @Test("g offsets move a fill crop inward from the gravity's edge; fp centres it on a focus point, kept inside")
    func gravityOffsetsAndFocusPoint() async throws {
        let fixture = try await Self.start()
        defer { Task { await fixture.stop() } }
        // fill 100×100: the source is resized to 150×100 and 100 of its 150 columns are kept.
        let red = { (options: String) async throws -> Int in Int(try await Self.image(fixture, options).pixel(x: 50, y: 50).red) }
        #expect(abs(try await red("rs:fill:100:100/g:we") - 85) < 8)
        #expect(abs(try await red("rs:fill:100:100/g:we:25:0") - 128) < 8)
        #expect(abs(try await red("rs:fill:100:100/g:ea:25:0") - 128) < 8, "east offsets count leftward")
        #expect(abs(try await red("rs:fill:100:100/g:fp:0.4:0.5") - 102) < 8)
        #expect(abs(try await red("rs:fill:100:100/g:fp:1:0.5") - 170) < 8, "a focus point at the edge keeps the crop inside")
        await fixture.stop()
    }

    /// 300×200 flat grey with a red and green checkerboard at x 220..<290, y 60..<140.
    static func busyRight() throws -> Data {
        var pixels = [UInt8](repeating: 128, count: 300 * 200 * 4)
        for y in 0..<200 { for x in 0..<300 {
            let i = (y * 300 + x) * 4
            pixels[i + 3] = 255
            if (220..<290).contains(x) && (60..<140).contains(y) {
                let red = ((x / 5) + (y / 5)) % 2 == 0
                (pixels[i], pixels[i + 1], pixels[i + 2]) = red ? (255, 0, 0) : (0, 255, 0)
            }
        } }
        return try Image(rgbaPixels: pixels, width: 300, height: 200).encoded(as: .png())
    }

    @Test("g:sm crops where libvips' attention model finds detail; the centre crop misses it")
    func smartGravity() async throws {
        let fixture = try await ServerFixture.start(image: Self.busyRight())
        defer { Task { await fixture.stop() } }
        let hasRed = { (image: Image) throws -> Bool in
            try (0..<image.width).contains { x in try image.pixel(x: x, y: image.height / 2).red > 200 }
        }
        #expect(try hasRed(try await Self.image(fixture, "rs:fill:100:200/g:sm")))
        #expect(try !hasRed(try await Self.image(fixture, "rs:fill:100:200/g:ce")))
        #expect(try hasRed(try await Self.image(fixture, "c:100:200:sm")), "a crop with smart gravity")
        await fixture.stop()
    }

    @Test("t cuts a border of one colour, optionally equal on both sides")
    func trim() async throws {
        // 100×80 white with a red 40×40 square at (20, 10).
        var pixels = [UInt8](repeating: 255, count: 100 * 80 * 4)
        for y in 10..<50 { for x in 20..<60 { let i = (y * 100 + x) * 4; pixels[i + 1] = 0; pixels[i + 2] = 0 } }
        let source = try Image(rgbaPixels: pixels, width: 100, height: 80).encoded(as: .png())
        let fixture = try await ServerFixture.start(image: source)
        defer { Task { await fixture.stop() } }
        let trimmed = try await Self.image(fixture, "t:10")
        #expect((trimmed.width, trimmed.height) == (40, 40))
        #expect(try trimmed.pixel(x: 0, y: 0).green == 0)
        let equal = try await Self.image(fixture, "trim:10:FFFFFF:1:1")
        #expect((equal.width, equal.height) == (60, 60), "20 cut from each side, 10 from top and bottom")
        #expect(try await Self.size(fixture, "t:10/w:20") == (20, 20), "the resize is of the trimmed image")
        await fixture.stop()
    }

    @Test("ar:0 keeps the stored orientation; by default EXIF orientation turns the image upright")
    func autoRotate() async throws {
        let rotated = try Data(contentsOf: ConformanceTests.directory.appendingPathComponent("edge/orientation-6.jpg"))
        let fixture = try await ServerFixture.start(image: rotated)
        defer { Task { await fixture.stop() } }
        #expect(try await Self.size(fixture, "ar:0") == (48, 32))
        #expect(try await Self.size(fixture, "w:48") == (32, 48))
        #expect(try await Self.size(fixture, "rs:fit:24:24/auto_rotate:0") == (24, 16))
        #expect(try await Self.size(fixture, "rs:fit:24:24/ar:1") == (16, 24))
        await fixture.stop()
    }

    @Test("bg without arguments turns a background off (a preset's, say)")
    func backgroundOff() throws {
        #expect(try ProcessingOptions.parse(["bg:ff0000"], maxDimension: 1000).background != nil)
        #expect(try ProcessingOptions.parse(["bg:ff0000", "bg"], maxDimension: 1000).background == nil)
        let presets = ProcessingOptions.Presets(named: ["default": ["bg:00ff00"]])
        #expect(try ProcessingOptions.parse(["background"], maxDimension: 1000, presets: presets).background == nil)
    }

    @Test("Geometry options refuse bad arguments naming the option")
    func badArguments() {
        for bad in ["mw:-1", "c:1", "c:a:b", "g:fp:2:0", "g:we:1", "t:300", "t:1:zz", "ex:2", "exar:1:up", "z:1:2:3", "rs:fit:1:1:2", "ex:1:sm"] {
            #expect(throws: ProcessingOptions.ParseError.self, "\(bad)") { try ProcessingOptions.parse([bad], maxDimension: 1000) }
        }
    }
}

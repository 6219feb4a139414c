import Foundation
import Halcyon
@testable import HalcyonServer
import Testing

/// imgproxy's options, each checked on the output (dimensions, headers), against a real server.
@Suite("imgproxy options")
struct ImgproxyOptionTests {
    /// A 300×200 PNG source.
    static func start() async throws -> ServerFixture {
        try await ServerFixture.start(image: TestImages.encodedGradient(.png(), width: 300, height: 200))
    }

    static func size(_ fixture: ServerFixture, _ options: String, id: String = UUID().uuidString) async throws -> (Int, Int) {
        let reply = try await fixture.get(fixture.signedPath(options, source: fixture.source("/image/\(id)"), ext: "png"))
        guard reply.status == 200 else { return (-reply.status, 0) }
        let image = try ImageDecoder.decode(reply.body)
        return (image.width, image.height)
    }

    @Test("s:W:H and rt:TYPE set the size and the resizing type as rs does")
    func sizeAndType() async throws {
        let fixture = try await Self.start()
        defer { Task { await fixture.stop() } }
        #expect(try await Self.size(fixture, "s:100:100") == (100, 67))
        #expect(try await Self.size(fixture, "rt:fill/s:100:100") == (100, 100))
        #expect(try await Self.size(fixture, "size:60") == (60, 40))
        #expect(try await Self.size(fixture, "resizing_type:force/s:50:50") == (50, 50))
        await fixture.stop()
    }

    @Test("fill-down crops a small source to the box's aspect ratio instead of enlarging; fill keeps its size")
    func fillDown() async throws {
        let fixture = try await Self.start()
        defer { Task { await fixture.stop() } }
        #expect(try await Self.size(fixture, "rs:fill-down:400:400") == (200, 200))
        #expect(try await Self.size(fixture, "rs:fill-down:600:300") == (300, 150))
        #expect(try await Self.size(fixture, "rs:fill:400:400") == (300, 200))
        #expect(try await Self.size(fixture, "rs:fill-down:100:100") == (100, 100), "a larger source fills as fill does")
        await fixture.stop()
    }

    @Test("auto fills when source and box have the same orientation, fits otherwise")
    func auto() async throws {
        let fixture = try await Self.start()
        defer { Task { await fixture.stop() } }
        #expect(try await Self.size(fixture, "rs:auto:100:50") == (100, 50), "landscape in landscape: fill")
        #expect(try await Self.size(fixture, "rs:auto:50:100") == (50, 33), "landscape in portrait: fit")
        await fixture.stop()
    }

    @Test("zoom and dpr multiply the size (or scale the source), never enlarging; past the limit is a 400")
    func zoomAndPixelRatio() async throws {
        let fixture = try await Self.start()
        defer { Task { await fixture.stop() } }
        #expect(try await Self.size(fixture, "z:0.5") == (150, 100))
        #expect(try await Self.size(fixture, "zoom:0.5/w:100") == (50, 33))
        #expect(try await Self.size(fixture, "dpr:2/w:50") == (100, 67))
        #expect(try await Self.size(fixture, "dpr:3/w:150") == (300, 200), "not enlarged past the source")
        #expect(try await Self.size(fixture, "z:2") == (300, 200), "zoom alone does not enlarge")
        let over = try await fixture.get(fixture.signedPath("dpr:8/w:8000", source: fixture.source("/image/dpr")))
        #expect(over.status == 400 && over.errorCode == "invalid_option", "\(over.errorMessage ?? "")")
        #expect(try await Self.size(fixture, "z:0.5:0.25") == (150, 50), "separate x and y factors")
        await fixture.stop()
    }

    @Test("el lets fit, fill and zoom scale up, within the per-side limit checked before any work")
    func enlarge() async throws {
        let fixture = try await ServerFixture.start(image: TestImages.encodedGradient(.png(), width: 300, height: 200)) {
            $0.maxResultDimension = 1000
        }
        defer { Task { await fixture.stop() } }
        #expect(try await Self.size(fixture, "rs:fit:600:600/el:1") == (600, 400))
        #expect(try await Self.size(fixture, "rs:fill:450:450/enlarge:t") == (450, 450))
        #expect(try await Self.size(fixture, "z:2/el") == (600, 400))
        #expect(try await Self.size(fixture, "w:900/el:0") == (300, 200), "el:0 keeps the default")
        // 1000 wide is allowed, but the height that follows would be 667: fine; 4:1 zoom would be 1200 wide: refused.
        let over = try await fixture.get(fixture.signedPath("z:4/el:1", source: fixture.source("/image/el")))
        #expect(over.status == 422 && over.errorCode == "result_too_large", "\(over.errorCode ?? "")")
        #expect(fixture.upstream.hits("/image/el") == 1, "the header was read once; nothing was decoded past it")
        await fixture.stop()
    }

    @Test("Corner gravities anchor a fill crop at that corner")
    func cornerGravity() async throws {
        let fixture = try await Self.start()
        defer { Task { await fixture.stop() } }
        for (gravity, expectRed) in [("noea", true), ("nowe", false), ("soea", true), ("sowe", false)] {
            let reply = try await fixture.get(fixture.signedPath("rs:fill:50:50/g:\(gravity)", source: fixture.source("/image/g"), ext: "png"))
            let image = try ImageDecoder.decode(reply.body)
            let red = try image.pixel(x: 25, y: 25).red
            #expect(expectRed ? red > 150 : red < 100, "\(gravity): red \(red)")
        }
        await fixture.stop()
    }

    @Test("exp refuses an expired URL with 404 before any work; a future one is served")
    func expires() async throws {
        let fixture = try await Self.start()
        defer { Task { await fixture.stop() } }
        let past = Int(Date().timeIntervalSince1970) - 60
        let expired = try await fixture.get(fixture.signedPath("exp:\(past)/w:20", source: fixture.source("/image/exp")))
        #expect(expired.status == 404 && expired.errorCode == "expired")
        #expect(fixture.upstream.hits("/image/exp") == 0)
        let future = Int(Date().timeIntervalSince1970) + 3600
        #expect(try await Self.size(fixture, "expires:\(future)/w:20") == (20, 13))
        await fixture.stop()
    }

    @Test("fn and att set Content-Disposition with the output's extension; cb changes nothing but the URL")
    func disposition() async throws {
        let fixture = try await Self.start()
        defer { Task { await fixture.stop() } }
        let named = try await fixture.get(fixture.signedPath("fn:holiday/w:20", source: fixture.source("/image/fn"), ext: "png"))
        #expect(named.header("content-disposition") == #"inline; filename="holiday.png"; filename*=UTF-8''holiday.png"#)
        let attached = try await fixture.get(fixture.signedPath("att:1/w:20", source: fixture.source("/image/fn"), ext: "webp"))
        #expect(attached.header("content-disposition") == #"attachment; filename="image.webp"; filename*=UTF-8''image.webp"#)
        let encoded = Data("Grüße".utf8).base64EncodedString().replacingOccurrences(of: "=", with: "")
        let unicode = try await fixture.get(fixture.signedPath("filename:\(encoded):1/return_attachment", source: fixture.source("/image/fn"), ext: "jpg"))
        #expect(unicode.header("content-disposition") == #"attachment; filename="Gr__e.jpg"; filename*=UTF-8''Gr%C3%BC%C3%9Fe.jpg"#)
        let unnamed = try await fixture.get(fixture.signedPath("w:20", source: fixture.source("/image/fn")))
        #expect(unnamed.header("content-disposition") == nil)
        let plain = try await fixture.get(fixture.signedPath("w:30", source: fixture.source("/image/cb"), ext: "png"))
        let busted = try await fixture.get(fixture.signedPath("cb:v2/w:30", source: fixture.source("/image/cb"), ext: "png"))
        #expect(busted.status == 200 && busted.body == plain.body)
        let quoted = Data("a\"b".utf8).base64EncodedString().replacingOccurrences(of: "=", with: "")
        let bad = try await fixture.get(fixture.signedPath("fn:\(quoted):1/w:20", source: fixture.source("/image/fn")))
        #expect(bad.status == 400)
        await fixture.stop()
    }
}

@Suite("imgproxy settings")
struct ImgproxySettingsTests {
    @Test("IMGPROXY_* names set the equivalent settings; HALCYON_* wins; a zero file size limit is ignored")
    func aliases() throws {
        let key = String(repeating: "ab", count: 32), salt = String(repeating: "cd", count: 16)
        let loaded = try ServerConfiguration.load(file: nil, environment: [
            "IMGPROXY_KEY": key, "IMGPROXY_SALT": salt, "IMGPROXY_TTL": "3600", "IMGPROXY_MAX_SRC_RESOLUTION": "12.5",
            "IMGPROXY_MAX_SRC_FILE_SIZE": "0", "IMGPROXY_MAX_ANIMATION_FRAMES": "7", "IMGPROXY_WORKERS": "3",
            "HALCYON_MAX_IN_FLIGHT": "5",
        ])
        #expect(loaded.keys == [key] && loaded.salts == [salt] && loaded.isSigned)
        #expect(loaded.cacheMaxAge == 3600 && loaded.maxSourceMegapixels == 12.5 && loaded.maxAnimationFrames == 7)
        #expect(loaded.maxInFlight == 5, "HALCYON_MAX_IN_FLIGHT wins over IMGPROXY_WORKERS")
        #expect(loaded.maxSourceBytes == ServerConfiguration().maxSourceBytes, "imgproxy's 0 (no limit) is ignored")
        try loaded.validate()
        do {
            _ = try ServerConfiguration.load(file: nil, environment: ["IMGPROXY_WORKERS": "many"])
            Issue.record("a bad IMGPROXY_WORKERS was accepted")
        } catch {
            #expect(error.message.contains("IMGPROXY_WORKERS"), "the message names the variable the operator set: \(error.message)")
        }
    }
}

import Foundation
import Testing
@testable import Halcyon

/// Options with defaults, for calling processors directly.
let defaultOptions = HalcyonParsedOptionsInfo(nil)

@Suite("ImageProcessor composition")
struct ImageProcessorCompositionTests {
    @Test("append and |> run in order and join identifiers with |>")
    func composition() throws {
        let resize = ResizingImageProcessor(referenceSize: CGSize(width: 40, height: 40), mode: .none)
        let crop = CroppingImageProcessor(size: CGSize(width: 10, height: 20))
        let chain = resize |> crop
        #expect(chain.identifier == "\(resize.identifier)|>\(crop.identifier)")
        #expect(resize.append(another: crop).identifier == chain.identifier)
        let result = try chain.process(item: .image(TestImages.gradient(width: 100, height: 80)), options: defaultOptions)
        #expect(result.width == 10 && result.height == 20)
    }

    @Test("identifiers encode every parameter and differ when parameters differ")
    func identifiersAreDistinct() {
        let processors: [any ImageProcessor] = [
            DefaultImageProcessor.default,
            DownsamplingImageProcessor(size: CGSize(width: 300, height: 300)),
            DownsamplingImageProcessor(size: CGSize(width: 300, height: 200)),
            ResizingImageProcessor(referenceSize: CGSize(width: 300, height: 200)),
            ResizingImageProcessor(referenceSize: CGSize(width: 300, height: 200), mode: .aspectFill),
            CroppingImageProcessor(size: CGSize(width: 10, height: 10)),
            CroppingImageProcessor(size: CGSize(width: 10, height: 10), anchor: .zero),
            RoundCornerImageProcessor(cornerRadius: 12),
            RoundCornerImageProcessor(cornerRadius: 12, backgroundColor: .white),
            RoundCornerImageProcessor(radius: .widthFraction(0.5)),
            RoundCornerImageProcessor(cornerRadius: 12, roundingCorners: [.topLeft]),
            BorderImageProcessor(border: Border()),
            BorderImageProcessor(border: Border(color: .white)),
            BlurImageProcessor(blurRadius: 2),
            BlurImageProcessor(blurRadius: 2.5),
            OverlayImageProcessor(overlay: .black),
            OverlayImageProcessor(overlay: .black, fraction: 0.3),
            TintImageProcessor(tint: .black),
            TintImageProcessor(tint: Color(red: 1, green: 0, blue: 0, alpha: 0.5)),
            ColorControlsProcessor(brightness: 0, contrast: 1, saturation: 1, inputEV: 0),
            ColorControlsProcessor(brightness: 0.1, contrast: 1, saturation: 1, inputEV: 0),
            BlackWhiteProcessor(),
            BlendImageProcessor(blendMode: .multiply),
            BlendImageProcessor(blendMode: .screen),
            BlendImageProcessor(blendMode: .multiply, alpha: 0.5),
        ]
        let identifiers = processors.map(\.identifier)
        #expect(Set(identifiers).count == identifiers.count, "\(identifiers)")
        #expect(identifiers[0] == "")
        #expect(identifiers[1] == "halcyon.downsampling(300x300)")
        #expect(identifiers[4] == "halcyon.resizing(300x200,aspectFill)")
        #expect(identifiers[14] == "halcyon.blur(2.5)")
    }
}

@Suite("DefaultImageProcessor")
struct DefaultImageProcessorTests {
    @Test("decodes data and applies the scale factor to images")
    func decodeAndScale() throws {
        let data = try TestImages.encodedGradient(.png(), width: 30, height: 20)
        let options = HalcyonParsedOptionsInfo([.scaleFactor(3)])
        let decoded = try DefaultImageProcessor.default.process(item: .data(data), options: options)
        #expect(decoded.scale == 3 && decoded.width == 30)
        let rescaled = try DefaultImageProcessor.default.process(item: .image(TestImages.gradient()), options: options)
        #expect(rescaled.scale == 3)
    }
}

@Suite("DownsamplingImageProcessor")
struct DownsamplingImageProcessorTests {
    @Test("from data and from an image, fits the longer side")
    func downsample() throws {
        let processor = DownsamplingImageProcessor(size: CGSize(width: 50, height: 50))
        let data = try TestImages.encodedGradient(.jpeg(), width: 400, height: 200)
        let fromData = try processor.process(item: .data(data), options: defaultOptions)
        #expect(fromData.width == 50 && fromData.height == 25)
        let fromImage = try processor.process(item: .image(TestImages.gradient(width: 200, height: 400)), options: defaultOptions)
        #expect(fromImage.width == 25 && fromImage.height == 50)
        let atScale2 = try processor.process(item: .data(data), options: HalcyonParsedOptionsInfo([.scaleFactor(2)]))
        #expect(atScale2.width == 100 && atScale2.scale == 2)
    }
}

@Suite("ResizingImageProcessor")
struct ResizingImageProcessorTests {
    @Test("none stretches, aspectFit fits inside, aspectFill covers", arguments: [
        (ContentMode.none, 100, 100), (.aspectFit, 100, 50), (.aspectFill, 200, 100),
    ])
    func modes(mode: ContentMode, width: Int, height: Int) throws {
        let processor = ResizingImageProcessor(referenceSize: CGSize(width: 100, height: 100), mode: mode)
        let result = try processor.process(item: .image(TestImages.gradient(width: 80, height: 40)), options: defaultOptions)
        #expect(result.width == width && result.height == height)
    }

    @Test("animations keep every frame")
    func animated() throws {
        let processor = ResizingImageProcessor(referenceSize: CGSize(width: 40, height: 40), mode: .aspectFit)
        let result = try processor.process(item: .image(TestImages.animation(frames: 4, width: 20, height: 10)), options: defaultOptions)
        #expect(result.frameCount == 4)
        #expect(result.width == 40 && result.height == 20)
        #expect(result.frameDelays.count == 4)
        #expect(try result.pixel(x: 20, y: 10, frame: 3).red == 120)
    }
}

@Suite("CroppingImageProcessor")
struct CroppingImageProcessorTests {
    @Test("crops around the anchor and clips to the image")
    func crop() throws {
        let source = try TestImages.gradient(width: 100, height: 50)
        let topLeft = try CroppingImageProcessor(size: CGSize(width: 10, height: 10), anchor: .zero).process(item: .image(source), options: defaultOptions)
        #expect(try topLeft.pixel(x: 0, y: 0) == source.pixel(x: 0, y: 0))
        let bottomRight = try CroppingImageProcessor(size: CGSize(width: 10, height: 10), anchor: CGPoint(x: 1, y: 1)).process(item: .image(source), options: defaultOptions)
        #expect(try bottomRight.pixel(x: 9, y: 9) == source.pixel(x: 99, y: 49))
        let clipped = try CroppingImageProcessor(size: CGSize(width: 500, height: 20)).process(item: .image(source), options: defaultOptions)
        #expect(clipped.width == 100 && clipped.height == 20)
        let animated = try CroppingImageProcessor(size: CGSize(width: 5, height: 5)).process(item: .image(TestImages.animation(frames: 3)), options: defaultOptions)
        #expect(animated.frameCount == 3 && animated.width == 5)
    }
}

@Suite("RoundCornerImageProcessor")
struct RoundCornerImageProcessorTests {
    @Test("corners become transparent, the centre stays")
    func transparentCorners() throws {
        let source = try TestImages.solid(RGBA8(red: 200, green: 10, blue: 10), width: 40, height: 40)
        let result = try RoundCornerImageProcessor(cornerRadius: 10).process(item: .image(source), options: defaultOptions)
        #expect(result.hasAlpha)
        #expect(try result.pixel(x: 0, y: 0).alpha == 0)
        #expect(try result.pixel(x: 39, y: 39).alpha == 0)
        #expect(try result.pixel(x: 20, y: 20) == RGBA8(red: 200, green: 10, blue: 10, alpha: 255))
        #expect(try result.pixel(x: 20, y: 0).alpha == 255)
    }

    @Test("only the chosen corners; a background colour fills them")
    func cornersAndBackground() throws {
        let source = try TestImages.solid(RGBA8(red: 0, green: 0, blue: 255), width: 40, height: 40)
        let processor = RoundCornerImageProcessor(cornerRadius: 10, roundingCorners: [.topLeft], backgroundColor: Color(red: 0, green: 1, blue: 0))
        let result = try processor.process(item: .image(source), options: defaultOptions)
        #expect(try result.pixel(x: 0, y: 0) == RGBA8(red: 0, green: 255, blue: 0, alpha: 255))
        #expect(try result.pixel(x: 39, y: 0) == RGBA8(red: 0, green: 0, blue: 255, alpha: 255))
    }

    @Test("a target size resizes first; animations keep every frame")
    func targetSizeAndAnimation() throws {
        let resized = try RoundCornerImageProcessor(radius: .widthFraction(0.5), targetSize: CGSize(width: 30, height: 30))
            .process(item: .image(TestImages.gradient(width: 90, height: 60)), options: defaultOptions)
        #expect(resized.width == 30 && resized.height == 30)
        #expect(try resized.pixel(x: 2, y: 2).alpha == 0)
        let animated = try RoundCornerImageProcessor(cornerRadius: 4).process(item: .image(TestImages.animation(frames: 3)), options: defaultOptions)
        #expect(animated.frameCount == 3)
        #expect(try animated.pixel(x: 0, y: 0, frame: 2).alpha == 0)
    }
}

@Suite("BorderImageProcessor")
struct BorderImageProcessorTests {
    @Test("paints the outer line width and leaves the inside")
    func border() throws {
        let source = try TestImages.solid(RGBA8(red: 255, green: 255, blue: 255), width: 30, height: 30)
        let result = try BorderImageProcessor(border: Border(color: Color(red: 1, green: 0, blue: 0), lineWidth: 3)).process(item: .image(source), options: defaultOptions)
        #expect(result.width == 30)
        #expect(try result.pixel(x: 0, y: 15) == RGBA8(red: 255, green: 0, blue: 0))
        #expect(try result.pixel(x: 2, y: 15) == RGBA8(red: 255, green: 0, blue: 0))
        #expect(try result.pixel(x: 15, y: 15) == RGBA8(red: 255, green: 255, blue: 255))
        #expect(try result.pixel(x: 4, y: 15) == RGBA8(red: 255, green: 255, blue: 255))
    }
}

@Suite("BlurImageProcessor")
struct BlurImageProcessorTests {
    @Test("spreads a sharp edge and keeps flat areas")
    func blur() throws {
        var pixels = [UInt8]()
        for _ in 0..<20 { for x in 0..<20 { pixels += x < 10 ? [0, 0, 0, 255] : [255, 255, 255, 255] } }
        let source = try Image(rgbaPixels: pixels, width: 20, height: 20)
        let result = try BlurImageProcessor(blurRadius: 2).process(item: .image(source), options: defaultOptions)
        let edge = try result.pixel(x: 9, y: 10).red
        #expect(edge > 40 && edge < 215)
        #expect(try result.pixel(x: 0, y: 10).red < 10)
        let unchanged = try BlurImageProcessor(blurRadius: 0).process(item: .image(source), options: defaultOptions)
        #expect(try unchanged.rgbaPixels() == pixels)
        #expect(throws: HalcyonError.self) { try BlurImageProcessor(blurRadius: -1).process(item: .image(source), options: defaultOptions) }
    }
}

@Suite("TintImageProcessor")
struct TintImageProcessorTests {
    @Test("composites the tint with its alpha over every pixel")
    func tint() throws {
        let source = try TestImages.gradient(width: 16, height: 16, alpha: 128)
        let tint = Color(red: 1, green: 0, blue: 0.5, alpha: 0.25)
        let result = try TintImageProcessor(tint: tint).process(item: .image(source), options: defaultOptions)
        for (x, y) in [(0, 0), (15, 15), (7, 3)] {
            let before = try source.pixel(x: x, y: y)
            let after = try result.pixel(x: x, y: y)
            func expected(_ value: UInt8, _ component: Double) -> Int { Int((Double(value) * 0.75 + component * 255 * 0.25).rounded()) }
            #expect(abs(Int(after.red) - expected(before.red, 1)) <= 1)
            #expect(abs(Int(after.green) - expected(before.green, 0)) <= 1)
            #expect(abs(Int(after.blue) - expected(before.blue, 0.5)) <= 1)
            #expect(abs(Int(after.alpha) - expected(before.alpha, 1)) <= 1)
        }
    }
}

@Suite("OverlayImageProcessor")
struct OverlayImageProcessorTests {
    @Test("mixes the overlay colour by fraction and keeps alpha")
    func overlay() throws {
        let source = try TestImages.gradient(width: 16, height: 16, alpha: 77)
        let result = try OverlayImageProcessor(overlay: Color(red: 0, green: 0, blue: 1), fraction: 0.7).process(item: .image(source), options: defaultOptions)
        let before = try source.pixel(x: 10, y: 5)
        let after = try result.pixel(x: 10, y: 5)
        #expect(abs(Int(after.red) - Int((Double(before.red) * 0.7).rounded())) <= 1)
        #expect(abs(Int(after.blue) - Int((Double(before.blue) * 0.7 + 255 * 0.3).rounded())) <= 1)
        #expect(after.alpha == 77)
    }
}

@Suite("ColorControlsProcessor")
struct ColorControlsProcessorTests {
    @Test("neutral values keep the pixels")
    func neutral() throws {
        let source = try TestImages.gradient(width: 12, height: 12)
        let result = try ColorControlsProcessor(brightness: 0, contrast: 1, saturation: 1, inputEV: 0).process(item: .image(source), options: defaultOptions)
        #expect(try result.rgbaPixels() == source.rgbaPixels())
    }

    @Test("brightness, contrast and exposure follow their formulas")
    func formulas() throws {
        let source = try TestImages.solid(RGBA8(red: 100, green: 150, blue: 200, alpha: 90))
        let result = try ColorControlsProcessor(brightness: 0.1, contrast: 1.2, saturation: 1, inputEV: 0.5).process(item: .image(source), options: defaultOptions)
        let pixel = try result.pixel(x: 3, y: 3)
        func expected(_ value: UInt8) -> Int {
            let channel: Double = Double(value) / 255
            let contrasted: Double = (channel + 0.1 - 0.5) * 1.2 + 0.5
            let exposed: Double = contrasted * pow(2.0, 0.5)
            let clipped: Double = min(1.0, max(0.0, exposed))
            return Int((clipped * 255).rounded())
        }
        #expect(abs(Int(pixel.red) - expected(100)) <= 1)
        #expect(abs(Int(pixel.green) - expected(150)) <= 1)
        #expect(abs(Int(pixel.blue) - expected(200)) <= 1)
        #expect(pixel.alpha == 90)
    }
}

@Suite("BlackWhiteProcessor")
struct BlackWhiteProcessorTests {
    @Test("every pixel becomes grey: luma brightened by 0.7 EV")
    func blackWhite() throws {
        let source = try TestImages.gradient(width: 16, height: 16)
        let result = try BlackWhiteProcessor().process(item: .image(source), options: defaultOptions)
        for (x, y) in [(0, 0), (15, 0), (5, 9), (15, 15)] {
            let before = try source.pixel(x: x, y: y)
            let after = try result.pixel(x: x, y: y)
            #expect(after.red == after.green && after.green == after.blue)
            let luma = 0.2125 * Double(before.red) + 0.7154 * Double(before.green) + 0.0721 * Double(before.blue)
            let expected = min(255, luma * pow(2, 0.7))
            #expect(abs(Double(after.red) - expected) <= 2, "(\(x),\(y)) \(after) vs \(expected)")
        }
    }
}

@Suite("BlendImageProcessor")
struct BlendImageProcessorTests {
    @Test("multiply over white keeps the image; alpha over black darkens it")
    func blend() throws {
        let source = try TestImages.solid(RGBA8(red: 200, green: 100, blue: 50))
        let multiplied = try BlendImageProcessor(blendMode: .multiply, alpha: 1, backgroundColor: .white).process(item: .image(source), options: defaultOptions)
        let same = try multiplied.pixel(x: 1, y: 1)
        #expect(abs(Int(same.red) - 200) <= 1 && abs(Int(same.green) - 100) <= 1)
        let faded = try BlendImageProcessor(blendMode: .normal, alpha: 0.5, backgroundColor: .black).process(item: .image(source), options: defaultOptions)
        let half = try faded.pixel(x: 1, y: 1)
        #expect(abs(Int(half.red) - 100) <= 2 && abs(Int(half.green) - 50) <= 2)
        #expect(half.alpha == 255)
    }
}

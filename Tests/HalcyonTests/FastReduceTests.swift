import Foundation
@testable import Halcyon
import Testing

/// Halcyon's fixed-point Lanczos-3 reduce (`halcyon_reduce.c`) against `vips_resize` on real libvips images.
@Suite("Fixed-point reduce")
struct FastReduceTests {
    /// An 8-bit image in memory: gradients, hard-edged bars and noise of ±`noise`, `bands` 1, 3 or 4.
    static func photo(width: Int, height: Int, bands: Int, noise amplitude: Int = 3) throws -> VipsImageRef {
        var pixels = [UInt8](repeating: 255, count: width * height * 4)
        var seed: UInt32 = 11
        for y in 0..<height {
            for x in 0..<width {
                seed = seed &* 1_103_515_245 &+ 12345
                let noise = Int(seed >> 24) % (2 * amplitude + 1) - amplitude
                let bar = (x / 37) % 2 == 0 ? 60 : 0
                let base = [x * 255 / width, y * 255 / height, (x + y) * 127 / (width + height) + bar]
                for channel in 0..<3 {
                    pixels[(y * width + x) * 4 + channel] = UInt8(clamping: base[channel] + noise)
                }
                pixels[(y * width + x) * 4 + 3] = UInt8(clamping: 128 + (x % 97) + noise)
            }
        }
        let image = try Image(rgbaPixels: pixels, width: width, height: height).vips.materialized()
        switch bands {
        case 4: return image
        case 1: return try image.bands(from: 1, count: 1).materialized()
        default: return try image.bands(from: 0, count: 3).materialized()
        }
    }

    /// PSNR in dB of two images of one size, over every band.
    static func psnr(_ a: VipsImageRef, _ b: VipsImageRef, bands: Int) throws -> Double {
        let (x, y) = (try a.rgbaBytes(bands: bands), try b.rgbaBytes(bands: bands))
        var squared = 0.0
        for index in x.indices {
            let delta = Double(x[index]) - Double(y[index])
            squared += delta * delta
        }
        let mse = squared / Double(max(1, x.count))
        return mse == 0 ? .infinity : 10 * log10(255 * 255 / mse)
    }

    /// `source` reduced by the fixed-point path (checked to have run) and by `vips_resize`, checked to be one size.
    static func reducedBothWays(_ source: VipsImageRef, h: Double, v: Double) throws -> (fast: VipsImageRef, reference: VipsImageRef) {
        let before = VipsImageRef.fastReduceCount
        let fast = try source.resized(horizontal: h, vertical: v)
        #expect(VipsImageRef.fastReduceCount > before, "the fixed-point path ran")
        let reference = try source.resizedByLibvips(horizontal: h, vertical: v)
        #expect(fast.width == reference.width && fast.height == reference.height,
                "\(fast.width)x\(fast.height) vs libvips' \(reference.width)x\(reference.height)")
        return (fast, reference)
    }

    @Test("the same size as vips_resize and within rounding of its pixels", arguments: [
        (bands: 3, h: 0.627, v: 0.627), (bands: 3, h: 0.4, v: 0.4), (bands: 3, h: 0.26, v: 0.3),
        (bands: 4, h: 0.5, v: 0.75), (bands: 1, h: 0.9, v: 0.33), (bands: 3, h: 1.0, v: 0.5), (bands: 3, h: 0.5, v: 1.0),
    ])
    func matchesLibvips(bands: Int, h: Double, v: Double) throws {
        let source = try Self.photo(width: 816, height: 612, bands: bands)
        let (fast, reference) = try Self.reducedBothWays(source, h: h, v: v)
        #expect(fast.bands == bands)
        let quality = try Self.psnr(fast, reference, bands: bands)
        // libvips 8.14 places its taps at 1/64-pixel steps from its own window start, so on sharp bars
        // with noise the two differ at about 45 dB; a half-pixel shift would give about 35 dB. The exact
        // reference below is the correctness check.
        #expect(quality >= 42, "PSNR \(quality) dB against vips_resize")
    }

    @Test("within 8-bit rounding of an exact Lanczos-3 on a noisy image", arguments: [0.627, 0.41, 0.3])
    func matchesExactLanczos(scale: Double) throws {
        let source = try Self.photo(width: 300, height: 200, bands: 1, noise: 40)
        let fast = try source.resized(horizontal: scale, vertical: scale)
        let input = try source.rgbaBytes(bands: 1).map(Double.init)
        let exact = ExactLanczos.reduce(input, width: 300, height: 200, toWidth: fast.width, toHeight: fast.height)
        func quality(_ image: VipsImageRef) throws -> Double {
            let bytes = try image.rgbaBytes(bands: 1)
            var squared = 0.0
            for index in bytes.indices { squared += pow(Double(bytes[index]) - exact[index], 2) }
            return 10 * log10(255 * 255 / (squared / Double(bytes.count)))
        }
        let (ours, libvips) = (try quality(fast), try quality(try source.resizedByLibvips(horizontal: scale, vertical: scale)))
        print("reduce \(scale): PSNR against an exact Lanczos-3: Halcyon \(String(format: "%.1f", ours)) dB, vips_resize \(String(format: "%.1f", libvips)) dB")
        #expect(ours >= 48, "PSNR \(ours) dB against a double-precision Lanczos-3")
    }

    @Test("images narrower than the kernel fold its edge taps and still match an exact Lanczos-3", arguments: [
        (width: 7, height: 5, scale: 0.5), (width: 3, height: 9, scale: 0.34), (width: 1, height: 12, scale: 0.5),
        (width: 12, height: 1, scale: 0.3), (width: 16, height: 16, scale: 0.26),
    ])
    func tinyImages(width: Int, height: Int, scale: Double) throws {
        let source = try Self.photo(width: width, height: height, bands: 1, noise: 40)
        let (fast, _) = try Self.reducedBothWays(source, h: scale, v: scale)
        let input = try source.rgbaBytes(bands: 1).map(Double.init)
        let exact = ExactLanczos.reduce(input, width: width, height: height, toWidth: fast.width, toHeight: fast.height)
        let bytes = try fast.rgbaBytes(bands: 1)
        let worst = zip(bytes, exact).map { abs(Double($0) - $1) }.max() ?? 0
        #expect(worst <= 1.5, "a pixel \(worst) levels from the exact reduce")
    }

    @Test("a flat image stays flat, edges included")
    func flatStaysFlat() throws {
        let pixels: [UInt8] = (0..<(300 * 200 * 4)).map { $0 % 4 == 3 ? 255 : 173 }
        let source = try Image(rgbaPixels: pixels, width: 300, height: 200).vips.materialized().bands(from: 0, count: 3).materialized()
        let result = try source.resized(horizontal: 0.37, vertical: 0.41)
        #expect(try result.rgbaBytes(bands: 3).allSatisfy { $0 == 173 })
    }

    @Test("upscales, big reductions and lazy images go to vips_resize")
    func otherCasesUseLibvips() throws {
        let source = try Self.photo(width: 400, height: 300, bands: 3)
        #expect(try source.resized(horizontal: 1.5, vertical: 1.5).width == 600)
        #expect(try source.resized(horizontal: 0.1, vertical: 0.1).width == 40)
        let lazy = try source.extracted(left: 10, top: 10, width: 380, height: 280)
        let reduced = try lazy.resized(horizontal: 0.5, vertical: 0.5)
        #expect(reduced.width == 190 && reduced.height == 140)
    }

    @Test("called directly, the reduce refuses lazy images and factors outside (1/4, 1] with an error")
    func refusesWhatItDoesNotTake() throws {
        let source = try Self.photo(width: 64, height: 48, bands: 3)
        #expect(try source.reducedByHalcyon(horizontal: 0.5, vertical: 0.5).width == 32)
        let lazy = try source.extracted(left: 1, top: 1, width: 60, height: 40)
        #expect(throws: HalcyonError.self) { try lazy.reducedByHalcyon(horizontal: 0.5, vertical: 0.5) }
        #expect(throws: HalcyonError.self) { try source.reducedByHalcyon(horizontal: 1e-10, vertical: 0.5) }
        #expect(throws: HalcyonError.self) { try source.reducedByHalcyon(horizontal: 1.5, vertical: 1.5) }
    }

    @Test("the reduce's result is in memory: rendering it into memory again, in a RenderCancellation too, shares it")
    func reducedImageIsNotCopiedAgain() throws {
        let source = try Self.photo(width: 816, height: 612, bands: 3)
        let cancellation = RenderCancellation()
        let (reduced, again) = try cancellation.run { () throws(HalcyonError) -> (VipsImageRef, VipsImageRef) in
            let reduced = try source.resized(horizontal: 0.5, vertical: 0.5)
            return (reduced, try reduced.materialized())
        }
        #expect(again.pointer == reduced.pointer, "the same buffer, not a copy made through libvips' thread pool")
        let lazy = try source.extracted(left: 8, top: 8, width: 400, height: 300)
        let rendered = try cancellation.run { () throws(HalcyonError) -> VipsImageRef in try lazy.materialized() }
        #expect(rendered.pointer != lazy.pointer, "a lazy image is still rendered")
        #expect(try rendered.rgbaBytes(bands: 3) == (try lazy.rgbaBytes(bands: 3)))
    }

    @Test("a raised RenderCancellation stops the reduce")
    func cancelStops() throws {
        let source = try Self.photo(width: 816, height: 612, bands: 3)
        let cancellation = RenderCancellation()
        let threw = Locked(false)
        #expect(throws: HalcyonError.self) {
            try cancellation.run { () throws(HalcyonError) -> Int in
                cancellation.cancel()
                do {
                    _ = try source.resized(horizontal: 0.5, vertical: 0.5)
                } catch {
                    threw.withLock { $0 = true }
                }
                return 0
            }
        }
        #expect(threw.withLock { $0 }, "the reduce itself failed once the flag was raised")
    }
}

extension VipsImageRef {
    /// The image's samples as bytes, `bands` per pixel (8-bit images only).
    func rgbaBytes(bands: Int) throws -> [UInt8] {
        let bytes = try pixelBytes()
        #expect(bytes.count == width * height * bands, "\(bytes.count) bytes for \(width)x\(height)x\(bands)")
        return bytes
    }
}

/// A double-precision separable Lanczos-3 (centre sampling, taps placed by the sizes, edges extended), the tests' ground truth.
enum ExactLanczos {
    static func kernel(_ x: Double) -> Double {
        if x == 0 { return 1 }
        if abs(x) >= 3 { return 0 }
        return 3 * sin(.pi * x) * sin(.pi * x / 3) / (.pi * .pi * x * x)
    }

    /// `count` input samples read through `sample(i)` (clamped), reduced to `out` samples.
    static func axis(_ count: Int, out: Int, _ sample: (Int) -> Double) -> [Double] {
        let shrink = Double(count) / Double(out)
        return (0..<out).map { o in
            let centre = (Double(o) + 0.5) * shrink
            let first = Int((centre - 3 * shrink + 0.5).rounded(.down)), taps = Int((6 * shrink).rounded(.up)) + 1
            var (sum, total) = (0.0, 0.0)
            for i in first..<(first + taps) {
                let weight = kernel((Double(i) + 0.5 - centre) / shrink)
                sum += weight * sample(min(max(i, 0), count - 1))
                total += weight
            }
            return min(255, max(0, sum / total))
        }
    }

    static func reduce(_ pixels: [Double], width: Int, height: Int, toWidth: Int, toHeight: Int) -> [Double] {
        var columns = [[Double]]()
        for x in 0..<width { columns.append(axis(height, out: toHeight) { pixels[$0 * width + x] }) }
        var result = [Double](repeating: 0, count: toWidth * toHeight)
        for y in 0..<toHeight {
            let row = axis(width, out: toWidth) { columns[$0][y] }
            for x in 0..<toWidth { result[y * toWidth + x] = row[x] }
        }
        return result
    }
}

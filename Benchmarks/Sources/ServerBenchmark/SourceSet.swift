import BenchmarkSupport
import Foundation
import Halcyon

/// One generated source image of the benchmark.
struct SourceImage {
    var name: String
    var format: ImageFormat
    var width: Int
    var height: Int
    var bytes: Int
}

/// The deterministic source set: 21 photographic-looking images (smooth gradients, soft
/// shapes, waves and a little sensor-like noise), 2–12 MP, a third each JPEG (q90), PNG and
/// WebP (q90), in landscape and portrait, all RGB without alpha as photographs are. Same seed,
/// same pixels on every machine (the `vips` CLI writes the PNG and WebP files).
enum SourceSet {
    /// Width × height of each image, 2–12 MP.
    static let sizes: [(Int, Int)] = [
        (1632, 1224), (2048, 1536), (2400, 1600), (1800, 2400), (3000, 2000), (2592, 1944), (4000, 3000),
        (1728, 1296), (2304, 1728), (2000, 3000), (2800, 2100), (3264, 2448), (3456, 2304), (2448, 3264),
        (1920, 1280), (2560, 1920), (2160, 2880), (3072, 2048), (3200, 2400), (3600, 2700), (2900, 3900),
    ]

    /// Writes the images into `folder` (reusing files already there) and describes them.
    static func make(in folder: URL, vips: String) throws -> [SourceImage] {
        try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
        var result: [SourceImage] = []
        for (index, size) in sizes.enumerated() {
            let format: ImageFormat = [.jpeg, .png, .webp][index % 3]
            let name = String(format: "s%02d.%@", index, format == .jpeg ? "jpg" : format.rawValue)
            let url = folder.appendingPathComponent(name)
            if !FileManager.default.fileExists(atPath: url.path) {
                let pixels = photographicPixels(seed: index, width: size.0, height: size.1)
                let image = try Image(rgbaPixels: pixels, width: size.0, height: size.1)
                if format == .jpeg {
                    try image.encoded(as: .jpeg(quality: 90)).write(to: url)
                } else {
                    // Photographs carry no alpha: PNG and WebP sources are made RGB by `vips flatten`.
                    let lossless = folder.appendingPathComponent("rgba-\(index).png")
                    try image.encoded(as: .png()).write(to: lossless)
                    let target = format == .webp ? url.path + "[Q=90]" : url.path
                    _ = try BenchmarkSupport.run(vips, ["flatten", lossless.path, target])
                    try? FileManager.default.removeItem(at: lossless)
                    guard FileManager.default.fileExists(atPath: url.path) else {
                        throw CocoaError(.fileWriteUnknown, userInfo: [NSFilePathErrorKey: url.path])
                    }
                }
            }
            let bytes = (try? FileManager.default.attributesOfItem(atPath: url.path)[.size] as? Int) ?? 0
            result.append(SourceImage(name: name, format: format, width: size.0, height: size.1, bytes: bytes))
        }
        return result
    }

    /// RGBA pixels: a two-colour gradient, low-frequency waves, soft discs and bars, and ±3 noise.
    static func photographicPixels(seed: Int, width: Int, height: Int) -> [UInt8] {
        var state = UInt64(truncatingIfNeeded: seed + 1) &* 0x9E37_79B9_7F4A_7C15 | 1
        func next() -> UInt64 { state ^= state << 13; state ^= state >> 7; state ^= state << 17; return state }
        let top = (Double(next() % 200), Double(next() % 200), Double(next() % 200))
        let bottom = (Double(next() % 255), Double(next() % 255), Double(next() % 255))
        let discs: [(x: Double, y: Double, r: Double, c: Double)] = (0..<6).map { _ in
            (Double(next() % UInt64(width)), Double(next() % UInt64(height)),
             Double(width) * (0.05 + Double(next() % 100) / 600), Double(next() % 120) - 60)
        }
        let waveX = 40 + Double(next() % 160), waveY = 30 + Double(next() % 140)
        var out = [UInt8](repeating: 255, count: width * height * 4)
        for y in 0..<height {
            let t = Double(y) / Double(height)
            let row = (top.0 + (bottom.0 - top.0) * t, top.1 + (bottom.1 - top.1) * t, top.2 + (bottom.2 - top.2) * t)
            let waveRow = cos(Double(y) / waveY)
            for x in 0..<width {
                var shade = 28 * sin(Double(x) / waveX) * waveRow
                for disc in discs {
                    let dx = Double(x) - disc.x, dy = Double(y) - disc.y
                    let d2 = dx * dx + dy * dy
                    if d2 < disc.r * disc.r { shade += disc.c * (1 - d2 / (disc.r * disc.r)) }
                }
                if (x / 97 + y / 131) % 7 == 0 { shade -= 18 }
                let noise = Int(next() % 7) - 3
                let index = (y * width + x) * 4
                out[index] = UInt8(clamping: Int(row.0 + shade) + noise)
                out[index + 1] = UInt8(clamping: Int(row.1 + shade * 0.8) + noise)
                out[index + 2] = UInt8(clamping: Int(row.2 + shade * 0.6) + noise)
            }
        }
        return out
    }

    /// The photographs in `folder` (scripts/bench-photos.sh: `photo-*.jpg` with PNG and WebP copies), sorted by name.
    static func photographs(in folder: URL) throws -> [SourceImage] {
        let names = try FileManager.default.contentsOfDirectory(atPath: folder.path).filter { $0.hasPrefix("photo-") }.sorted()
        return try names.compactMap { name -> SourceImage? in
            guard let format = ImageFormat(fileExtension: (name as NSString).pathExtension),
                  [.jpeg, .png, .webp].contains(format) else { return nil }
            let data = try Data(contentsOf: folder.appendingPathComponent(name))
            let header = try ImageDecoder.probe(data)
            return SourceImage(name: name, format: format, width: header.width, height: header.height, bytes: data.count)
        }
    }
}

import BenchmarkSupport
import Foundation
import Halcyon

/// The output check of one format: dimensions and PSNR of each server's result against a
/// reference resize by the `vips` CLI (`vips thumbnail SOURCE ref.png 512 --height 512`, lossless).
struct QualityRow {
    var format: String
    var sources = 0
    var sameSize = [0, 0]
    var psnr = [[Double](), [Double]()]
    var bytes = [[Int](), [Int]()]
    var problems: [String] = []

    func markdown(servers: [String]) -> String {
        func mean(_ values: [Double]) -> String { values.isEmpty ? "–" : String(format: "%.1f", values.reduce(0, +) / Double(values.count)) }
        func low(_ values: [Double]) -> String { values.min().map { String(format: "%.1f", $0) } ?? "–" }
        func kib(_ values: [Int]) -> String { values.isEmpty ? "–" : String(format: "%.1f", Double(values.reduce(0, +)) / Double(values.count) / 1024) }
        return (0..<2).map { side in
            "| \(format) | \(servers[side]) | \(sameSize[side])/\(sources) | \(mean(psnr[side])) | \(low(psnr[side])) | \(kib(bytes[side])) |"
        }.joined(separator: "\n") + "\n"
    }
}

enum QualityCheck {
    /// Fetches each source's result from both servers (`urls[side](source)`) and compares it with the reference.
    static func check(format: String, sources: [SourceImage], folder: URL, work: URL, urls: [(SourceImage) -> String]) -> QualityRow {
        var row = QualityRow(format: format)
        guard let vips = which("vips") else {
            row.problems.append("vips CLI not found (apt-get install libvips-tools)")
            return row
        }
        for source in sources {
            row.sources += 1
            let reference = work.appendingPathComponent("ref-\(source.name).png")
            _ = try? BenchmarkSupport.run(vips, ["thumbnail", folder.appendingPathComponent(source.name).path, reference.path, "512", "--height", "512"])
            guard let refData = try? Data(contentsOf: reference), let ref = try? Image(data: refData) else {
                row.problems.append("no reference for \(source.name)")
                continue
            }
            for side in 0..<2 {
                guard let (status, body) = fetch(urls[side](source), attempts: 3), status == 200,
                      let image = try? Image(data: body) else {
                    row.problems.append("side \(side) gave no image for \(source.name)")
                    continue
                }
                row.bytes[side].append(body.count)
                guard image.width == ref.width, image.height == ref.height else {
                    row.problems.append("side \(side) \(source.name): \(image.width)×\(image.height), reference \(ref.width)×\(ref.height)")
                    continue
                }
                row.sameSize[side] += 1
                if let value = psnr(image, ref) { row.psnr[side].append(value) }
            }
        }
        return row
    }

    /// PSNR in dB over the RGB channels of two images of one size; nil when pixels cannot be read.
    static func psnr(_ a: Image, _ b: Image) -> Double? {
        guard let pa = try? a.rgbaPixels(), let pb = try? b.rgbaPixels(), pa.count == pb.count, !pa.isEmpty else { return nil }
        var sum = 0.0
        var count = 0
        var index = 0
        while index < pa.count {
            for channel in 0..<3 {
                let d = Double(pa[index + channel]) - Double(pb[index + channel])
                sum += d * d
            }
            count += 3
            index += 4
        }
        let mse = sum / Double(count)
        return mse == 0 ? 99 : 10 * log10(255 * 255 / mse)
    }
}

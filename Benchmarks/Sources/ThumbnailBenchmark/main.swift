// Thumbnail benchmark: DownsamplingImageProcessor to 300 px vs `vipsthumbnail -s 300` and
// vs Pillow's `Image.thumbnail`, side by side in one run on the same 20 generated 4000×3000 JPEGs.
//
// Every side reads each JPEG from disk, shrinks it on load to fit 300×300, encodes a JPEG at
// quality 75 (vipsthumbnail's default) and writes it. vipsthumbnail and Pillow
// (Scripts/pillow_thumbnail.py, `python3`; set PYTHON to choose another) each run as one
// process over all 20 files, so their start-up is paid once per round. The order of the
// sides rotates from round to round; the table reports the median round.
import BenchmarkSupport
import Foundation
import Halcyon

// MARK: - Inputs

let fileCount = 20
let width = 4000
let height = 3000
let rounds = Int(ProcessInfo.processInfo.environment["BENCH_ROUNDS"] ?? "") ?? 5
let workRoot = URL(fileURLWithPath: FileManager.default.currentDirectoryPath).appendingPathComponent("work/thumbnail")
let inputFolder = workRoot.appendingPathComponent("input")
let halcyonOutput = workRoot.appendingPathComponent("out-halcyon")
let vipsOutput = workRoot.appendingPathComponent("out-vipsthumbnail")
let pillowOutput = workRoot.appendingPathComponent("out-pillow")
let pillowScript = URL(fileURLWithPath: FileManager.default.currentDirectoryPath).appendingPathComponent("Scripts/pillow_thumbnail.py")
let python = ProcessInfo.processInfo.environment["PYTHON"] ?? "python3"

/// A deterministic photo-like 4000×3000 JPEG: smooth gradients plus a seeded texture.
func makeInput(index: Int) throws -> Data {
    var pixels = [UInt8](repeating: 255, count: width * height * 4)
    var state = UInt32(0x9E37_79B9) &+ UInt32(index) &* 7919
    pixels.withUnsafeMutableBufferPointer { buffer in
        for y in 0..<height {
            for x in 0..<width {
                state ^= state << 13
                state ^= state >> 17
                state ^= state << 5
                let noise = Int(state & 31) - 16
                let offset = (y * width + x) * 4
                let wave = Int(60 * sin(Double(x + index * 97) / 180) * cos(Double(y) / 140))
                buffer[offset] = UInt8(clamping: x * 255 / width + noise + wave)
                buffer[offset + 1] = UInt8(clamping: y * 255 / height + noise - wave)
                buffer[offset + 2] = UInt8(clamping: (index * 12 + (x + y) / 40) % 256 + noise)
            }
        }
    }
    return try Image(rgbaPixels: pixels, width: width, height: height).encoded(as: .jpeg(quality: 85))
}

func prepareInputs() throws -> [URL] {
    try FileManager.default.createDirectory(at: inputFolder, withIntermediateDirectories: true)
    var urls: [URL] = []
    for index in 0..<fileCount {
        let url = inputFolder.appendingPathComponent(String(format: "photo-%02d.jpg", index))
        if !FileManager.default.fileExists(atPath: url.path) {
            try makeInput(index: index).write(to: url, options: .atomic)
        }
        urls.append(url)
    }
    return urls
}

// MARK: - The two sides

func runHalcyon(_ inputs: [URL]) throws -> Duration {
    try? FileManager.default.removeItem(at: halcyonOutput)
    try FileManager.default.createDirectory(at: halcyonOutput, withIntermediateDirectories: true)
    let processor = DownsamplingImageProcessor(size: CGSize(width: 300, height: 300))
    let options = HalcyonParsedOptionsInfo(nil)
    let clock = ContinuousClock()
    return try clock.measure {
        for url in inputs {
            let data = try Data(contentsOf: url)
            let image = try processor.process(item: .data(data), options: options)
            let jpeg = try image.encoded(as: .jpeg(quality: 75))
            try jpeg.write(to: halcyonOutput.appendingPathComponent(url.lastPathComponent))
        }
    }
}

/// Runs `arguments` through /usr/bin/env after emptying `output`; the wall time of the whole process.
func runTool(_ name: String, output: URL, _ arguments: [String]) throws -> Duration {
    try? FileManager.default.removeItem(at: output)
    try FileManager.default.createDirectory(at: output, withIntermediateDirectories: true)
    let process = Process()
    process.executableURL = URL(fileURLWithPath: "/usr/bin/env")
    process.arguments = arguments
    let clock = ContinuousClock()
    let elapsed = try clock.measure {
        try process.run()
        process.waitUntilExit()
    }
    guard process.terminationStatus == 0 else {
        throw NSError(domain: name, code: Int(process.terminationStatus),
                      userInfo: [NSLocalizedDescriptionKey: "\(name) exited with \(process.terminationStatus)"])
    }
    return elapsed
}

func runVipsthumbnail(_ inputs: [URL]) throws -> Duration {
    try runTool("vipsthumbnail", output: vipsOutput,
                ["vipsthumbnail", "-s", "300", "-o", vipsOutput.path + "/%s.jpg[Q=75]"] + inputs.map(\.path))
}

func runPillow(_ inputs: [URL]) throws -> Duration {
    try runTool("Pillow", output: pillowOutput, [python, pillowScript.path, pillowOutput.path] + inputs.map(\.path))
}

func milliseconds(_ duration: Duration) -> Double {
    Double(duration.components.seconds) * 1000 + Double(duration.components.attoseconds) / 1e15
}

// MARK: - Run

let inputs = try prepareInputs()
let sides: [(name: String, output: URL, run: ([URL]) throws -> Duration)] = [
    ("Halcyon DownsamplingImageProcessor", halcyonOutput, runHalcyon),
    ("vipsthumbnail -s 300", vipsOutput, runVipsthumbnail),
    ("Pillow Image.thumbnail((300, 300))", pillowOutput, runPillow),
]
for side in sides { _ = try side.run(Array(inputs.prefix(2))) }
var times = [[Double]](repeating: [], count: sides.count)
for round in 0..<rounds {
    for step in 0..<sides.count {
        let index = (round + step) % sides.count
        times[index].append(milliseconds(try sides[index].run(inputs)))
    }
}

// Every side must have made a thumbnail of the same size.
let sample = inputs[0].lastPathComponent
let sizes = try sides.map { side -> (Int, Int) in
    let image = try ImageDecoder.decode(Data(contentsOf: side.output.appendingPathComponent(sample)))
    return (image.width, image.height)
}
guard sizes.allSatisfy({ $0 == sizes[0] }) else {
    print("size mismatch: " + zip(sides, sizes).map { "\($0.name) \($1.0)x\($1.1)" }.joined(separator: ", "))
    exit(1)
}

let medians = times.map(median)
var table = """
    ### Thumbnail: \(fileCount) JPEGs \(width)×\(height) → 300 px JPEG (median of \(rounds) rounds, libvips \(HalcyonVersion.libvips))

    | side | total ms | ms / image | Halcyon time / this side |
    |---|---:|---:|---:|

    """
for (index, side) in sides.enumerated() {
    table += String(format: "| %@ | %.1f | %.1f | %.3f× |\n", side.name, medians[index], medians[index] / Double(fileCount), medians[0] / medians[index])
}
table += """

    Goal vs vipsthumbnail ≤ 1.10×. Output size \(sizes[0].0)×\(sizes[0].1) on every side. All rounds (ms): \
    \(zip(sides, times).map { "\($0.name): \($1.map { String(format: "%.0f", $0) }.joined(separator: ", "))" }.joined(separator: "; ")).

    """
print(table)
appendToBenchResults(table)
recordSummary(benchmark: "Thumbnail", comparison: "DownsamplingImageProcessor vs vipsthumbnail (time)",
              result: String(format: "%.3f× the time", medians[0] / medians[1]), goal: "≤ 1.10×", met: medians[0] / medians[1] <= 1.10)
recordSummary(benchmark: "Thumbnail", comparison: "DownsamplingImageProcessor vs Pillow Image.thumbnail (time)",
              result: String(format: "%.3f× the time", medians[0] / medians[2]), goal: "—", met: nil)

// Thumbnail benchmark: DownsamplingImageProcessor to 300 px vs `vipsthumbnail -s 300`,
// side by side in one run on the same 20 generated 4000×3000 JPEGs.
//
// Both sides read each JPEG from disk, shrink it on load to fit 300×300, encode a JPEG at
// quality 75 (vipsthumbnail's default) and write it. vipsthumbnail runs as one process over
// all 20 files, so its start-up is paid once per round. Rounds alternate between the two
// sides; the table reports the median round.
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

func runVipsthumbnail(_ inputs: [URL]) throws -> Duration {
    try? FileManager.default.removeItem(at: vipsOutput)
    try FileManager.default.createDirectory(at: vipsOutput, withIntermediateDirectories: true)
    let process = Process()
    process.executableURL = URL(fileURLWithPath: "/usr/bin/env")
    process.arguments = ["vipsthumbnail", "-s", "300", "-o", vipsOutput.path + "/%s.jpg[Q=75]"] + inputs.map(\.path)
    let clock = ContinuousClock()
    let elapsed = try clock.measure {
        try process.run()
        process.waitUntilExit()
    }
    guard process.terminationStatus == 0 else {
        throw NSError(domain: "vipsthumbnail", code: Int(process.terminationStatus))
    }
    return elapsed
}

func milliseconds(_ duration: Duration) -> Double {
    Double(duration.components.seconds) * 1000 + Double(duration.components.attoseconds) / 1e15
}

func median(_ values: [Double]) -> Double {
    let sorted = values.sorted()
    return sorted[sorted.count / 2]
}

// MARK: - Run

let inputs = try prepareInputs()
_ = try runHalcyon(Array(inputs.prefix(2)))
_ = try runVipsthumbnail(Array(inputs.prefix(2)))
var halcyonTimes: [Double] = []
var vipsTimes: [Double] = []
for round in 0..<rounds {
    if round % 2 == 0 {
        halcyonTimes.append(milliseconds(try runHalcyon(inputs)))
        vipsTimes.append(milliseconds(try runVipsthumbnail(inputs)))
    } else {
        vipsTimes.append(milliseconds(try runVipsthumbnail(inputs)))
        halcyonTimes.append(milliseconds(try runHalcyon(inputs)))
    }
}

// Check both sides made thumbnails of the same size.
let sample = inputs[0].lastPathComponent
let ours = try ImageDecoder.decode(Data(contentsOf: halcyonOutput.appendingPathComponent(sample)))
let theirs = try ImageDecoder.decode(Data(contentsOf: vipsOutput.appendingPathComponent(sample)))
guard ours.width == theirs.width, ours.height == theirs.height else {
    print("size mismatch: halcyon \(ours.width)x\(ours.height), vipsthumbnail \(theirs.width)x\(theirs.height)")
    exit(1)
}

let halcyonMedian = median(halcyonTimes)
let vipsMedian = median(vipsTimes)
let ratio = halcyonMedian / vipsMedian
let table = """
    ### Thumbnail: \(fileCount) JPEGs \(width)×\(height) → 300 px JPEG (median of \(rounds) rounds, libvips \(HalcyonVersion.libvips))

    | side | total ms | ms / image |
    |---|---:|---:|
    | Halcyon DownsamplingImageProcessor | \(String(format: "%.1f", halcyonMedian)) | \(String(format: "%.1f", halcyonMedian / Double(fileCount))) |
    | vipsthumbnail -s 300 | \(String(format: "%.1f", vipsMedian)) | \(String(format: "%.1f", vipsMedian / Double(fileCount))) |
    | **ratio Halcyon / vipsthumbnail** | **\(String(format: "%.3f", ratio))×** | goal ≤ 1.10× |

    Output size \(ours.width)×\(ours.height) on both sides. All rounds (ms): Halcyon \(halcyonTimes.map { String(format: "%.0f", $0) }.joined(separator: ", ")); vipsthumbnail \(vipsTimes.map { String(format: "%.0f", $0) }.joined(separator: ", ")).

    """
print(table)
if let path = ProcessInfo.processInfo.environment["BENCH_RESULTS"] {
    let url = URL(fileURLWithPath: path)
    let existing = (try? String(contentsOf: url, encoding: .utf8)) ?? "# Halcyon benchmark results\n\n"
    try (existing + table + "\n").write(to: url, atomically: true, encoding: .utf8)
}

// Memory benchmark: peak resident memory of turning a 50 MP JPEG into a 300 px image.
//
// The parent makes a deterministic 8660×5773 JPEG (49.99 MP, just under the
// default 50 MP decoding limit) in work/memory/, then runs itself as a child
// process once per case. Each child does one job and reports its VmHWM (peak
// resident set) from /proc/self/status, so every figure is a fresh process's
// peak, start-up included. The goal for the downsampling case is < 150 MB.
//
//   cd Benchmarks && swift run -c release MemoryBenchmark
//
// Prints a table; appends it as markdown to $BENCH_RESULTS when set.
import BenchmarkSupport
import Foundation
import Halcyon

let width = 8660
let height = 5773
let goalMegabytes = 150.0
let workFolder = URL(fileURLWithPath: FileManager.default.currentDirectoryPath).appendingPathComponent("work/memory")
let inputURL = workFolder.appendingPathComponent("50mp-\(width)x\(height).jpg")

// MARK: - Child: one job, then report

/// The jobs a child can run, each on the JPEG at `path`.
enum Job: String, CaseIterable {
    /// Read the file only: the floor (runtime, libvips not started, file bytes).
    case readOnly = "read-only"
    /// Decode with `DownsamplingImageProcessor` to 300 px (shrink-on-load), encode a JPEG.
    case downsample = "downsample-300"
    /// Decode the whole image, then shrink it: what shrink-on-load avoids.
    case fullDecode = "full-decode-then-resize"

    var title: String {
        switch self {
        case .readOnly: return "read the file only (floor)"
        case .downsample: return "DownsamplingImageProcessor(300×300) from data"
        case .fullDecode: return "full decode, then ResizingImageProcessor to 300"
        }
    }
}

func runChild(job: Job, path: String) -> Int32 {
    let started = Date()
    do {
        let data = try Data(contentsOf: URL(fileURLWithPath: path))
        var size = "-"
        switch job {
        case .readOnly:
            size = "\(data.count)B"
        case .downsample:
            let processor = DownsamplingImageProcessor(size: CGSize(width: 300, height: 300))
            let image = try processor.process(item: .data(data), options: HalcyonParsedOptionsInfo(nil))
            _ = try image.encoded(as: .jpeg(quality: 80))
            size = "\(image.width)×\(image.height)"
        case .fullDecode:
            let image = try ImageDecoder.decode(data)
            let small = try ResizingImageProcessor(referenceSize: CGSize(width: 300, height: 300), mode: .aspectFit)
                .process(item: .image(image), options: HalcyonParsedOptionsInfo(nil))
            _ = try small.encoded(as: .jpeg(quality: 80))
            size = "\(small.width)×\(small.height)"
        }
        let memory = residentKilobytes()
        print("RESULT peak_kb=\(memory.peak) size=\(size) seconds=\(Date().timeIntervalSince(started))")
        return 0
    } catch {
        print("ERROR \(error)")
        return 1
    }
}

// MARK: - Parent: make the input, run each job in a fresh process

/// A deterministic photo-like image: gradients, a wave and xorshift noise.
func makeInput() throws -> Data {
    var pixels = [UInt8](repeating: 255, count: width * height * 4)
    var state: UInt32 = 0x9E37_79B9
    pixels.withUnsafeMutableBufferPointer { buffer in
        for y in 0..<height {
            let rowWave = cos(Double(y) / 300)
            for x in 0..<width {
                state ^= state << 13
                state ^= state >> 17
                state ^= state << 5
                let noise = Int(state & 15) - 8
                let wave = Int(50 * sin(Double(x) / 400) * rowWave)
                let offset = (y * width + x) * 4
                buffer[offset] = UInt8(clamping: x * 255 / width + noise + wave)
                buffer[offset + 1] = UInt8(clamping: y * 255 / height + noise - wave)
                buffer[offset + 2] = UInt8(clamping: (x + y) / 60 % 256 + noise)
            }
        }
    }
    let image = try Image(rgbaPixels: pixels, width: width, height: height)
    return try image.encoded(as: .jpeg(quality: 85))
}

struct Row {
    let job: Job
    let peakMegabytes: Double
    let size: String
    let seconds: Double
}

func runParent() throws -> Int32 {
    try FileManager.default.createDirectory(at: workFolder, withIntermediateDirectories: true)
    if !FileManager.default.fileExists(atPath: inputURL.path) {
        print("making \(inputURL.lastPathComponent) …")
        try makeInput().write(to: inputURL)
    }
    let fileBytes = (try? FileManager.default.attributesOfItem(atPath: inputURL.path)[.size] as? Int) ?? 0
    print("input: \(inputURL.path), \(width)×\(height) (\(String(format: "%.2f", Double(width * height) / 1e6)) MP), \(fileBytes / 1024) KiB")

    var rows: [Row] = []
    for job in Job.allCases {
        let process = Process()
        process.executableURL = URL(fileURLWithPath: CommandLine.arguments[0]).standardizedFileURL
        process.arguments = ["--child", job.rawValue, inputURL.path]
        let pipe = Pipe()
        process.standardOutput = pipe
        try process.run()
        let output = String(decoding: pipe.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
        process.waitUntilExit()
        guard process.terminationStatus == 0,
              let line = output.split(separator: "\n").first(where: { $0.hasPrefix("RESULT ") }) else {
            print("\(job.rawValue) failed (status \(process.terminationStatus)): \(output)")
            return 1
        }
        var fields: [String: String] = [:]
        for pair in line.dropFirst("RESULT ".count).split(separator: " ") {
            let parts = pair.split(separator: "=", maxSplits: 1)
            if parts.count == 2 { fields[String(parts[0])] = String(parts[1]) }
        }
        let peak = Double(fields["peak_kb"] ?? "") ?? -1
        rows.append(Row(job: job, peakMegabytes: peak / 1024, size: fields["size"] ?? "?",
                        seconds: Double(fields["seconds"] ?? "") ?? -1))
    }

    var table = "### Memory: 50 MP JPEG (\(width)×\(height)) to 300 px, peak RSS of a fresh process\n\n"
    table += "| case | peak RSS (MB) | result | time (s) |\n|---|---:|---|---:|\n"
    for row in rows {
        table += "| \(row.job.title) | \(String(format: "%.1f", row.peakMegabytes)) | \(row.size) | \(String(format: "%.2f", row.seconds)) |\n"
    }
    let downsample = rows.first { $0.job == .downsample }?.peakMegabytes ?? .infinity
    let met = downsample > 0 && downsample < goalMegabytes
    let verdict = met ? "meets" : "MISSES"
    table += "\nDownsampling peak \(String(format: "%.1f", downsample)) MB \(verdict) the goal of < \(Int(goalMegabytes)) MB.\n"
    print(table)
    appendToBenchResults(table)
    recordSummary(benchmark: "Memory", comparison: "50 MP JPEG → 300 px, peak RSS of a fresh process",
                  result: String(format: "%.1f MB", downsample), goal: "< \(Int(goalMegabytes)) MB", met: met)
    return met ? 0 : 2
}

// MARK: - Entry

let arguments = CommandLine.arguments
if arguments.count == 4, arguments[1] == "--child", let job = Job(rawValue: arguments[2]) {
    exit(runChild(job: job, path: arguments[3]))
}
do {
    exit(try runParent())
} catch {
    print("memory benchmark failed: \(error)")
    exit(1)
}

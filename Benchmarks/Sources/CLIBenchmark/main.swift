// CLI benchmark: the shipped `halcyon process` against `vipsthumbnail` and Pillow, as processes, on
// real photographs, side by side in one run.
//
// Every side fits each photograph (BENCH_PHOTOS: the JPEGs scripts/bench-photos.sh writes) into
// 512×512 and writes a JPEG at quality 80:
// - `halcyon process IN OUT -p "downsample(512x512)" --format jpeg --quality 80` (HALCYON_BIN, its
//   defaults: files at once up to the core count and the memory budget),
// - `vipsthumbnail -s 512 -o OUT/%s.jpg[Q=80] FILES…` (one process, the files in turn, each on
//   libvips' threads),
// - Pillow's `draft` + `thumbnail` loop (Scripts/pillow_thumbnail.py, one process, in turn).
// Two cells: the whole folder in one process, and one file (the largest JPEG) in one process.
// Each cell runs BENCH_ROUNDS (default 7) rounds, the order of the sides rotating; the table gives
// the median wall time, its spread, and the CPU time (user + system of the child) per run.
import BenchmarkSupport
import Foundation
import Halcyon

// MARK: - Inputs

let environment = ProcessInfo.processInfo.environment
let rounds = max(1, Int(environment["BENCH_ROUNDS"] ?? "") ?? 7)
let python = environment["PYTHON"] ?? "python3"
let pillowScript = URL(fileURLWithPath: FileManager.default.currentDirectoryPath).appendingPathComponent("Scripts/pillow_thumbnail.py")
let work = URL(fileURLWithPath: FileManager.default.currentDirectoryPath).appendingPathComponent("work/cli")
guard let halcyon = environment["HALCYON_BIN"], FileManager.default.isExecutableFile(atPath: halcyon) else {
    print("HALCYON_BIN must name the halcyon executable (swift build -c release --product halcyon)")
    exit(1)
}
guard let photos = environment["BENCH_PHOTOS"] else {
    print("BENCH_PHOTOS must name the photographs' folder (scripts/bench-photos.sh FOLDER)")
    exit(1)
}
guard let vipsthumbnail = which("vipsthumbnail") else {
    print("vipsthumbnail is needed: apt-get install libvips-tools")
    exit(1)
}
let folderInput = work.appendingPathComponent("folder")
let singleInput = work.appendingPathComponent("single")
try? FileManager.default.removeItem(at: work)
for folder in [folderInput, singleInput] { try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true) }
let jpegs = try FileManager.default.contentsOfDirectory(atPath: photos).filter { $0.hasSuffix(".jpg") }.sorted()
guard !jpegs.isEmpty else {
    print("no JPEG in \(photos)")
    exit(1)
}
for name in jpegs {
    try FileManager.default.copyItem(atPath: photos + "/" + name, toPath: folderInput.appendingPathComponent(name).path)
}
let largest = jpegs.max { a, b in
    let size = { (name: String) in (try? FileManager.default.attributesOfItem(atPath: photos + "/" + name)[.size] as? Int) ?? 0 }
    return size(a) < size(b)
} ?? jpegs[0]
try FileManager.default.copyItem(atPath: photos + "/" + largest, toPath: singleInput.appendingPathComponent(largest).path)

// MARK: - Sides


/// One command's wall and CPU time.
struct Timing {
    var wall: Double
    var cpu: Double
}

/// Runs `arguments` after emptying `output`; its wall time and its CPU time (user + system, from wait4).
func timed(_ arguments: [String], output: URL) throws -> Timing {
    try? FileManager.default.removeItem(at: output)
    try FileManager.default.createDirectory(at: output, withIntermediateDirectories: true)
    var pid: pid_t = 0
    let argv = arguments.map { strdup($0) } + [nil]
    defer { argv.forEach { free($0) } }
    var actions = posix_spawn_file_actions_t()
    posix_spawn_file_actions_init(&actions)
    posix_spawn_file_actions_addopen(&actions, 1, "/dev/null", O_WRONLY, 0)
    defer { posix_spawn_file_actions_destroy(&actions) }
    let started = ContinuousClock.now
    guard posix_spawnp(&pid, arguments[0], &actions, nil, argv, environ) == 0 else {
        throw CocoaError(.executableLoad, userInfo: [NSLocalizedDescriptionKey: "cannot start \(arguments[0])"])
    }
    var status: Int32 = 0
    var usage = rusage()
    _ = wait4(pid, &status, 0, &usage)
    let wall = ContinuousClock.now - started
    guard status == 0 else {
        throw CocoaError(.executableLoad, userInfo: [NSLocalizedDescriptionKey: "\(arguments.joined(separator: " ")) exited with \(status)"])
    }
    func seconds(_ time: timeval) -> Double { Double(time.tv_sec) + Double(time.tv_usec) / 1e6 }
    let wallSeconds = Double(wall.components.seconds) + Double(wall.components.attoseconds) / 1e18
    return Timing(wall: wallSeconds * 1000, cpu: (seconds(usage.ru_utime) + seconds(usage.ru_stime)) * 1000)
}

struct Side {
    var name: String
    var command: (_ input: URL, _ files: [String], _ output: URL) -> [String]
}

let sides = [
    Side(name: "halcyon process") { input, _, output in
        [halcyon, "process", input.path, output.path, "-p", "downsample(512x512)", "--format", "jpeg", "--quality", "80"]
    },
    Side(name: "vipsthumbnail") { input, files, output in
        [vipsthumbnail, "-s", "512", "-o", output.path + "/%s.jpg[Q=80]"] + files.map { input.appendingPathComponent($0).path }
    },
    Side(name: "Pillow draft+thumbnail") { input, files, output in
        [python, pillowScript.path, "--size", "512", "--quality", "80", output.path] + files.map { input.appendingPathComponent($0).path }
    },
]

// MARK: - Run

let cells: [(name: String, input: URL, files: [String])] = [
    ("folder of \(jpegs.count) photographs", folderInput, jpegs),
    ("one photograph (\(largest))", singleInput, [largest]),
]
var rows = ""
for cell in cells {
    var timings = [[Timing]](repeating: [], count: sides.count)
    for (index, side) in sides.enumerated() {
        _ = try timed(side.command(cell.input, cell.files, work.appendingPathComponent("warm-\(index)")), output: work.appendingPathComponent("warm-\(index)"))
    }
    for round in 0..<rounds {
        for step in 0..<sides.count {
            let index = (round + step) % sides.count
            let output = work.appendingPathComponent("out-\(index)")
            timings[index].append(try timed(sides[index].command(cell.input, cell.files, output), output: output))
        }
    }
    let walls = timings.map { median($0.map(\.wall)) }
    for (index, side) in sides.enumerated() {
        let all = timings[index].map(\.wall)
        let cpu = median(timings[index].map(\.cpu))
        rows += String(format: "| %@ | %@ | %.0f (%.0f–%.0f) | %.0f | %.2f | %.2f× |\n", cell.name, side.name, walls[index],
                       all.min() ?? 0, all.max() ?? 0, cpu, cpu / max(1, walls[index]), walls[index] / walls[0])
        print("\(cell.name) \(side.name): wall \(all.map { String(format: "%.0f", $0) }.joined(separator: ", ")) ms")
    }
    let goal = cell.files.count > 1 ? 1.5 : 1.0
    for (index, peer) in sides.enumerated().dropFirst() {
        let ratio = walls[index] / walls[0]
        recordSummary(benchmark: "CLI", comparison: "\(cell.name): \(peer.name) time ÷ halcyon process time",
                      result: String(format: "%.2f×", ratio), goal: String(format: "≥ %.1f×", goal),
                      met: cell.files.count > 1 || index == 1 ? ratio >= goal : nil)
    }
}

// The same thumbnail size on every side (the single cell's outputs).
let sizes = try (0..<sides.count).map { index -> String in
    let image = try ImageDecoder.decode(Data(contentsOf: work.appendingPathComponent("out-\(index)").appendingPathComponent(largest)))
    return "\(image.width)×\(image.height)"
}
let table = """

    ## CLIBenchmark: photographs to 512 px JPEG q80, as processes

    \(ProcessInfo.processInfo.activeProcessorCount) cores, libvips \(HalcyonVersion.libvips); \(rounds) rounds per cell, the sides' order rotating; \
    the shipped `halcyon process` with its defaults. Median wall ms (min–max); CPU ms is the child's user + system time (median); \
    cores = CPU ÷ wall; "× halcyon" is the side's time ÷ halcyon's (above 1: halcyon is faster). Output sizes of one file: \(sizes.joined(separator: ", ")).

    | cell | side | wall ms | CPU ms | cores | × halcyon |
    |---|---|---:|---:|---:|---:|
    \(rows)
    """
print(table)
appendToBenchResults(table)


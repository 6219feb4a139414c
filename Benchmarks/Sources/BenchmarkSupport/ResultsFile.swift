import Foundation

/// Appends `markdown` to the file named by `$BENCH_RESULTS`, when set; `make bench` collects every table there.
public func appendToBenchResults(_ markdown: String) {
    guard let path = ProcessInfo.processInfo.environment["BENCH_RESULTS"], !path.isEmpty else { return }
    if let handle = FileHandle(forWritingAtPath: path) {
        handle.seekToEndOfFile()
        handle.write(Data((markdown + "\n").utf8))
        handle.closeFile()
    } else {
        try? (markdown + "\n").write(toFile: path, atomically: true, encoding: .utf8)
    }
}

/// This process's resident set in kB from /proc/self/status: the peak (`VmHWM`) and now (`VmRSS`); -1 when unreadable.
public func residentKilobytes() -> (peak: Int, current: Int) {
    guard let status = try? String(contentsOfFile: "/proc/self/status", encoding: .utf8) else { return (-1, -1) }
    func field(_ name: String) -> Int {
        for line in status.split(separator: "\n") where line.hasPrefix(name + ":") {
            return Int(line.dropFirst(name.count + 1).split(whereSeparator: \.isWhitespace).first ?? "") ?? -1
        }
        return -1
    }
    return (field("VmHWM"), field("VmRSS"))
}

/// Adds one row to the summary table `make bench` puts at the top of bench-results.md
/// (the file named by `$BENCH_SUMMARY`, when set): what was compared, the figure, the goal, whether it was met.
public func recordSummary(benchmark: String, comparison: String, result: String, goal: String, met: Bool?) {
    guard let path = ProcessInfo.processInfo.environment["BENCH_SUMMARY"], !path.isEmpty else { return }
    let verdict = met.map { $0 ? "yes" : "**no**" } ?? "—"
    let row = "| \(benchmark) | \(comparison) | \(result) | \(goal) | \(verdict) |\n"
    if let handle = FileHandle(forWritingAtPath: path) {
        handle.seekToEndOfFile()
        handle.write(Data(row.utf8))
        handle.closeFile()
    } else {
        try? row.write(toFile: path, atomically: true, encoding: .utf8)
    }
}

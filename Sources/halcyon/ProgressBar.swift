import Foundation
import Halcyon

/// A one-line progress bar redrawn in place on a terminal: items, bytes, rate and ETA.
///
/// Redraws at most every 100 ms (and always for the last item); one lock.
final class ProgressBar: Sendable {
    private struct State {
        var done = 0
        var failed = 0
        var bytes = 0
        var lastDraw = ContinuousClock.now - .seconds(1)
    }

    private let total: Int
    private let started = ContinuousClock.now
    private let state = Locked(State())
    private let width = 28

    init(total: Int) {
        self.total = total
    }

    /// Records one finished item and redraws when due.
    func advance(bytes: Int, failed: Bool) {
        let line = state.withLock { state -> String? in
            state.done += 1
            state.bytes += bytes
            if failed { state.failed += 1 }
            let now = ContinuousClock.now
            guard state.done == total || now - state.lastDraw >= .milliseconds(100) else { return nil }
            state.lastDraw = now
            return render(state, now: now)
        }
        if let line { FileHandle.standardError.write(Data(("\r\u{1B}[K" + line).utf8)) }
    }

    /// Ends the bar's line.
    func finish() {
        FileHandle.standardError.write(Data("\n".utf8))
    }

    private func render(_ state: State, now: ContinuousClock.Instant) -> String {
        let fraction = total == 0 ? 1 : Double(state.done) / Double(total)
        let filled = Int((fraction * Double(width)).rounded(.down))
        let bar = String(repeating: "█", count: filled) + String(repeating: "░", count: width - filled)
        let seconds = max(0.001, (now - started).halcyonMillisecondsValue / 1000)
        let rate = Double(state.bytes) / seconds
        let remaining = state.done > 0 ? seconds / Double(state.done) * Double(total - state.done) : 0
        let failures = state.failed > 0 ? "  \(state.failed) failed" : ""
        return "[\(bar)] \(state.done)/\(total)  \(ByteFormat.string(state.bytes))  \(ByteFormat.string(Int(rate)))/s  ETA \(Int(remaining.rounded()))s\(failures)"
    }
}

/// Human-readable byte counts: `512 B`, `1.5 KB`, `3.2 MB`.
enum ByteFormat {
    static func string(_ bytes: Int) -> String {
        let units = ["B", "KB", "MB", "GB", "TB"]
        var value = Double(bytes)
        var unit = 0
        while value >= 1024, unit < units.count - 1 {
            value /= 1024
            unit += 1
        }
        return unit == 0 ? "\(bytes) B" : String(format: "%.1f %@", value, units[unit])
    }
}

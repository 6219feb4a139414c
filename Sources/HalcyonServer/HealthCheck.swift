import Foundation
import Halcyon

/// Really exercises libvips: makes a tiny image, resizes it and encodes it as PNG.
public struct HealthCheck: Sendable {
    /// Makes the check.
    public init() {}

    /// Whether libvips made, processed and encoded an image; runs on the caller's thread.
    public func check() -> Bool {
        let pixels = [UInt8](repeating: 200, count: 8 * 8 * 4)
        guard let image = try? Image(rgbaPixels: pixels, width: 8, height: 8),
              let small = try? ResizingImageProcessor(referenceSize: CGSize(width: 4, height: 4)).process(item: .image(image), options: HalcyonParsedOptionsInfo(nil)),
              let data = try? ImageEncoder.encode(small, as: .png()) else { return false }
        return ImageFormat(sniffing: data) == .png && small.width == 4
    }
}

/// The `/health` answer, computed at most once per `interval` however many
/// clients ask: callers within the interval get the last result, and callers
/// during a check share it. So a flood of `/health` costs one libvips check
/// per second, and the endpoint still turns unhealthy within a second of
/// libvips failing. One lock guards the state.
public final class HealthMonitor: Sendable {
    private struct State {
        var checkedAt: ContinuousClock.Instant?
        var healthy = false
        var running: Task<Bool, Never>?
    }

    private let check: @Sendable () -> Bool
    private let interval: Duration
    private let state = Locked(State())

    /// Makes a monitor over `check` (by default ``HealthCheck/check()``) that keeps a result for `interval`.
    public init(interval: Duration = .seconds(1), check: @escaping @Sendable () -> Bool = { HealthCheck().check() }) {
        self.interval = interval
        self.check = check
    }

    /// Whether the last check, at most `interval` old, passed.
    public func isHealthy() async -> Bool {
        let now = ContinuousClock.now
        let check = self.check
        let (cached, task) = state.withLock { state -> (Bool?, Task<Bool, Never>?) in
            if let at = state.checkedAt, now - at < interval { return (state.healthy, nil) }
            if let running = state.running { return (nil, running) }
            let task = Task.detached { check() }
            state.running = task
            return (nil, task)
        }
        if let cached { return cached }
        guard let task else { return false }
        let healthy = await task.value
        state.withLock { state in
            if state.running == task {
                state.running = nil
                state.checkedAt = ContinuousClock.now
                state.healthy = healthy
            }
        }
        return healthy
    }
}

import Dispatch
import Foundation

/// Turns the chunks of a progressive JPEG download into previews (see ``ImageProgressive``).
///
/// A ``DataReceivingSideEffect``: it keeps the bytes, finds scan starts (SOS
/// markers, `FF DA`) in the new bytes only, and when a scan is complete
/// (the next one starts) decodes everything before it off the download's
/// thread, one decode at a time (a newer scan replaces a waiting one). One
/// lock guards the state. ``finish()`` stops every later preview.
final class ProgressiveJPEGPreviewer: DataReceivingSideEffect {
    private struct State {
        /// The download the bytes belong to; a new one (a retry) starts over.
        var task: ObjectIdentifier?
        var data = Data()
        /// Where the marker search resumes.
        var scanned = 0
        /// Offsets of the SOS markers seen.
        var scans: [Int] = []
        /// nil until the frame header is seen; false for a baseline JPEG or another format.
        var progressive: Bool?
        var decoding = false
        /// The end of the newest complete scan not decoded yet.
        var pending: Int?
        var delivered = 0
        var lastDelivery: ContinuousClock.Instant?
        var finished = false
    }

    private let settings: ImageProgressive
    private let decoding: ImageDecodingOptions
    private let deliver: @Sendable (Image, ProgressiveJPEGPreviewer) -> Void
    private let state = Locked(State())
    private let queue = DispatchQueue(label: "halcyon.progressive", qos: .utility)

    /// Previews with `settings`, decoded with `decoding`'s limits, handed to `deliver`.
    init(settings: ImageProgressive, decoding: ImageDecodingOptions, deliver: @escaping @Sendable (Image, ProgressiveJPEGPreviewer) -> Void) {
        self.settings = settings
        var tolerant = decoding
        tolerant.strictness = .none
        tolerant.onlyFirstFrame = true
        self.decoding = tolerant
        self.deliver = deliver
    }

    var onShouldApply: @Sendable () -> Bool { { [state] in state.withLock { !$0.finished } } }

    /// Stops previews: none is handed over after this returns (a delivery may check ``isFinished`` again).
    func finish() { state.withLock { $0.finished = true } }

    /// Whether ``finish()`` was called.
    var isFinished: Bool { state.withLock { $0.finished } }

    func onDataReceived(task: SessionDataTask, data: Data) {
        let start = state.withLock { state -> Int? in
            if state.task != ObjectIdentifier(task) {
                state = State(task: ObjectIdentifier(task), delivered: state.delivered, lastDelivery: state.lastDelivery)
            }
            guard state.progressive != false else { return nil }
            state.data.append(data)
            guard let end = findScans(&state) else { return nil }
            state.pending = end
            guard !state.decoding else { return nil }
            state.decoding = true
            return end
        }
        if start != nil { queue.async { self.decodeLoop() } }
    }

    /// Reads markers from `scanned` on; returns the end of a newly completed scan worth previewing.
    private func findScans(_ state: inout State) -> Int? {
        let bytes = state.data
        if state.scanned == 0 {
            guard bytes.count >= 2 else { return nil }
            guard bytes[bytes.startIndex] == 0xFF, bytes[bytes.startIndex + 1] == 0xD8 else { state.progressive = false; return nil }
        }
        var index = max(2, state.scanned)
        var completed: Int?
        while index + 1 < bytes.count {
            defer { index += 1 }
            guard bytes[bytes.startIndex + index] == 0xFF else { continue }
            let marker = bytes[bytes.startIndex + index + 1]
            if state.progressive == nil, (0xC0...0xCF).contains(marker), ![0xC4, 0xC8, 0xCC].contains(marker) {
                state.progressive = marker == 0xC2 || marker == 0xC6 || marker == 0xCA || marker == 0xCE
            }
            guard marker == 0xDA else { continue }
            if state.progressive != true { state.progressive = false; return nil }
            state.scans.append(index)
            if state.scans.count >= 2 { completed = index }
        }
        state.scanned = max(2, bytes.count - 1)
        guard let end = completed, wants(state) else { return nil }
        return end
    }

    /// Whether another preview is allowed now.
    private func wants(_ state: State) -> Bool {
        if state.finished || (settings.isFastestScan && state.delivered > 0) { return false }
        if let last = state.lastDelivery, settings.scanInterval > 0, ContinuousClock.now - last < .milliseconds(Int64(settings.scanInterval * 1000)) {
            return false
        }
        return true
    }

    /// Decodes the newest pending scan until none is left.
    private func decodeLoop() {
        while let (prefix, scanIndex) = state.withLock({ state -> (Data, Int)? in
            guard let end = state.pending, !state.finished, wants(state) else {
                state.decoding = false
                state.pending = nil
                return nil
            }
            state.pending = nil
            return (state.data.prefix(end) + Data([0xFF, 0xD9]), state.scans.firstIndex(of: end) ?? 1)
        }) {
            guard var image = try? ImageDecoder.decode(prefix, options: decoding) else { continue }
            if settings.isBlur, let blurred = try? BlurImageProcessor(blurRadius: CGFloat(max(1, 8 / scanIndex)))
                .process(item: .image(image), options: HalcyonParsedOptionsInfo([])) {
                image = blurred
            }
            let send = state.withLock { state -> Bool in
                guard !state.finished else { return false }
                state.delivered += 1
                state.lastDelivery = .now
                return true
            }
            if send { deliver(image, self) }
        }
    }
}

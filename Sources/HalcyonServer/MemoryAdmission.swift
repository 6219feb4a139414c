import Foundation
import Halcyon

/// Admission by memory for one request's processing: before any pixel is
/// decoded, the source's header gives the result's size (refused over
/// `maxResultMegapixels`, all frames counted, or over the per-side limit) and an estimate of the bytes the
/// work holds at its peak (decoded source, plus three result-sized buffers:
/// resize, one more step, encoder input; four bytes a pixel; every frame; plus
/// a fixed 8 MiB), which is reserved from the process-wide ``MemoryBudget``.
/// Reservations are kept until the request ends (``release()``). One lock
/// guards the reservations.
final class MemoryAdmission: Sendable {
    private let budget: MemoryBudget
    private let options: ProcessingOptions
    private let maxResultPixels: Int
    private let maxResultSide: Int
    private let wait: Duration
    private let reservations = Locked<[MemoryReservation]>([])

    init(budget: MemoryBudget, options: ProcessingOptions, maxResultPixels: Int, maxResultSide: Int = .max, wait: Duration) {
        self.budget = budget
        self.options = options
        self.maxResultPixels = maxResultPixels
        self.maxResultSide = maxResultSide
        self.wait = wait
    }

    /// `base` (or plain decoding) behind the admission check; same identifier, so caching and coalescing are unchanged.
    ///
    /// For a chain that starts with the resize step, which opens the source
    /// once and calls ``admit(_:)`` itself, use that chain as it is.
    func guarding(_ base: (any ImageProcessor)?) -> any ImageProcessor {
        let processor = base ?? DefaultImageProcessor.default
        return GeneralProcessor(identifier: base?.identifier ?? "") { item, parsed throws(HalcyonError) in
            if case .data(let data) = item {
                try self.admit(ImageDecoder.open(data, options: parsed.decodingOptions))
            }
            return try processor.process(item: item, options: parsed)
        }
    }

    /// Checks the result's size and reserves the estimate for an opened source; throws before any decoding.
    func admit(_ header: ImageDecoder.OpenedImage) throws(HalcyonError) {
        let frames = max(1, header.frameCount)
        let plan = Self.plan(options: options, width: header.width, height: header.height, format: header.format)
        guard plan.width <= maxResultSide, plan.height <= maxResultSide else {
            throw .processorError(reason: .resultTooLarge(width: plan.width, height: plan.height, frames: frames, limit: maxResultSide))
        }
        guard plan.resultPixels * frames <= maxResultPixels else {
            throw .processorError(reason: .resultTooLarge(width: plan.width, height: plan.height, frames: frames, limit: maxResultPixels))
        }
        let bytes = (plan.decodePixels + 3 * plan.resultPixels) * 4 * frames + 8 << 20
        let reservation = try budget.reserve(bytes, waitingAtMost: wait)
        reservations.withLock { $0.append(reservation) }
    }

    /// Gives every reservation back.
    func release() {
        let taken = reservations.withLock { list -> [MemoryReservation] in
            defer { list.removeAll() }
            return list
        }
        taken.forEach { $0.release() }
        // Hand large freed image buffers back to the system rather than keep them in malloc's arenas.
        if taken.reduce(0, { $0 + $1.bytes }) > 64 << 20 { MallocTuning.trim() }
    }

    /// The result size and the pixels decoded for a source of `width` × `height` (either orientation: the larger).
    static func plan(options: ProcessingOptions, width: Int, height: Int, format: ImageFormat) -> (width: Int, height: Int, resultPixels: Int, decodePixels: Int) {
        let sourcePixels = width * height
        var resized = (width: width, height: height)
        var shrink = 1.0
        if options.hasGeometry {
            let step = options.thumbnailStep(limits: ImageDecodingOptions())
            let plans = [step.plan(sourceWidth: width, sourceHeight: height), step.plan(sourceWidth: height, sourceHeight: width)]
            resized = (plans.map(\.canvas.width).max() ?? width, plans.map(\.canvas.height).max() ?? height)
            if step.trim == nil { shrink = min(1, plans.map(\.scale).max() ?? 1) }
        }
        // Padding grows the result (scaled by dpr, as the padding step does).
        let padding = options.padding
        let resultWidth = resized.width + Int((Double(padding.left + padding.right) * options.dpr).rounded())
        let resultHeight = resized.height + Int((Double(padding.top + padding.bottom) * options.dpr).rounded())
        let resultPixels = resultWidth * resultHeight
        // libjpeg's shrink lands at most twice the target per side; other formats decode whole.
        let decodePixels = shrink < 1 && format == .jpeg ? min(sourcePixels, Int(Double(sourcePixels) * shrink * shrink * 4) + 1) : sourcePixels
        return (resultWidth, resultHeight, resultPixels, decodePixels)
    }
}

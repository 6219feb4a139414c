import Foundation
import Halcyon

/// Admission by memory for one request's processing: before any pixel is
/// decoded, the source's header gives the result's size (refused over
/// `maxResultMegapixels`, all frames counted, or over the per-side limit) and an estimate of the bytes the
/// work holds at its peak (``MemoryEstimate``: what the source's loader holds whatever the shrink on load,
/// the decoded pixels, three result-sized buffers, the encoder's own memory, every frame, plus a fixed 8 MiB),
/// which is reserved from the process-wide ``MemoryBudget``. `/info` is admitted the same way
/// (``admitInfo(_:source:)``). Reservations are kept until the request ends (``release()``). One lock
/// guards the reservations.
final class MemoryAdmission: Sendable {
    private let budget: MemoryBudget
    private let options: ProcessingOptions
    private let output: ImageFormat?
    private let maxResultPixels: Int
    private let maxResultSide: Int
    private let wait: Duration
    private let reservations = Locked<[MemoryReservation]>([])

    /// Makes the admission of one request; `output` is the format asked for (nil: the source's).
    init(
        budget: MemoryBudget, options: ProcessingOptions, output: ImageFormat? = nil, maxResultPixels: Int, maxResultSide: Int = .max,
        wait: Duration
    ) {
        self.budget = budget
        self.options = options
        self.output = output
        self.maxResultPixels = maxResultPixels
        self.maxResultSide = maxResultSide
        self.wait = wait
    }

    /// Checks the result's size and reserves the estimate for an opened source (`data`, its bytes), suspending while
    /// the budget is short (see ``MemoryBudget/reserve(_:waitingAtMost:)``); throws before any decoding.
    func admit(_ header: ImageDecoder.OpenedImage, source data: Data) async throws(HalcyonError) {
        let frames = max(1, header.frameCount)
        let plan = Self.plan(options: options, width: header.width, height: header.height, format: header.format)
        guard plan.width <= maxResultSide, plan.height <= maxResultSide else {
            throw .processorError(reason: .resultTooLarge(width: plan.width, height: plan.height, frames: frames, limit: maxResultSide))
        }
        guard plan.resultPixels * frames <= maxResultPixels else {
            throw .processorError(reason: .resultTooLarge(width: plan.width, height: plan.height, frames: frames, limit: maxResultPixels))
        }
        try await reserve(estimate(header, source: data))
    }

    /// The estimate ``admit(_:source:)`` reserves for an opened source (`data`, its bytes), encoded in the format
    /// asked for, else in the source's.
    func estimate(_ header: ImageDecoder.OpenedImage, source data: Data) -> Int {
        let plan = Self.plan(options: options, width: header.width, height: header.height, format: header.format)
        return MemoryEstimate.bytes(
            source: MemoryEstimate.sourceClass(of: data, format: header.format, width: header.width, height: header.height),
            sourcePixels: header.width * header.height, decodePixels: plan.decodePixels, resultPixels: plan.resultPixels,
            frames: max(1, header.frameCount), output: output ?? header.format)
    }

    /// Reserves the estimate of `/info` for an opened source: its loader, and a decode shrunk to 64 pixels
    /// (libjpeg's 1/8 for a JPEG), of the first frame; nothing is encoded.
    func admitInfo(_ header: ImageDecoder.OpenedImage, source data: Data) async throws(HalcyonError) {
        try await reserve(Self.infoBytes(header, source: data))
    }

    /// The estimate ``admitInfo(_:source:)`` reserves.
    static func infoBytes(_ header: ImageDecoder.OpenedImage, source data: Data) -> Int {
        let sourcePixels = header.width * header.height
        let decodePixels = header.format == .jpeg ? sourcePixels / 64 + header.width + header.height : 64 * 64
        return MemoryEstimate.bytes(
            source: MemoryEstimate.sourceClass(of: data, format: header.format, width: header.width, height: header.height),
            sourcePixels: sourcePixels, decodePixels: decodePixels, resultPixels: 64 * 64, frames: 1, output: nil)
    }

    private func reserve(_ bytes: Int) async throws(HalcyonError) {
        let reservation = try await budget.reserve(bytes, waitingAtMost: wait)
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
        return (resultWidth, resultHeight, resultPixels, decodePixels(width: width, height: height, shrink: shrink, format: format))
    }

    /// Pixels decoded when the loader shrinks by `shrink` (1: not at all): the PNG loader's box shrink lands
    /// under four times the target per side, `vips_thumbnail` at it; libjpeg shrinks by 8 at most.
    static func decodePixels(width: Int, height: Int, shrink: Double, format: ImageFormat) -> Int {
        let sourcePixels = width * height
        guard shrink < 1 else { return sourcePixels }
        let landed = Int(Double(sourcePixels) * shrink * shrink * 16) + 1
        let jpegFloor = format == .jpeg ? ((width + 7) / 8) * ((height + 7) / 8) : 0
        return min(sourcePixels, max(landed, jpegFloor))
    }
}

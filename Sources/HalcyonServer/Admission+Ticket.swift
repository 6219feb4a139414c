import Foundation
import Halcyon

extension Admission {
    /// One request's admission by memory, handed to its work by ``Admission/run(on:options:output:_:)``.
    ///
    /// Before any pixel is decoded, the work gives the source's opened header to ``reserve(_:source:)``: the
    /// result's size is checked (refused over the megapixel limit, all frames counted, or over the per-side limit)
    /// and an estimate of the bytes the work holds at its peak (``MemoryEstimate``: what the source's loader holds
    /// whatever the shrink on load, the decoded pixels, three result-sized buffers, the encoder's own memory, every
    /// frame, plus a fixed 8 MiB) is reserved from the admission's ``MemoryBudget``. `/info` reserves its own
    /// estimate (``reserveInfo(_:source:)``). The admission gives every reservation back when the work has ended
    /// (``release()``). One lock guards the reservations.
    final class Ticket: Sendable {
        private let budget: MemoryBudget
        private let options: ProcessingOptions
        private let output: ImageFormat?
        private let maxResultPixels: Int
        private let maxResultSide: Int
        private let wait: Duration
        private let reservations = Locked<[MemoryReservation]>([])

        /// Makes the ticket of one request, estimated for `options` encoded as `output` (nil: the source's format),
        /// waiting at most `wait` for memory.
        init(budget: MemoryBudget, options: ProcessingOptions, output: ImageFormat?, maxResultPixels: Int, maxResultSide: Int,
             wait: Duration) {
            self.budget = budget
            self.options = options
            self.output = output
            self.maxResultPixels = maxResultPixels
            self.maxResultSide = maxResultSide
            self.wait = wait
        }

        /// Checks the result's size and reserves the estimate for an opened source (`data`, its bytes).
        ///
        /// Throws `resultTooLarge` before reserving anything; suspends while the budget is short, then throws
        /// `memoryBudgetExceeded` at the wait's end, or `taskCancelled` when the calling task is cancelled (see
        /// ``MemoryBudget/reserve(_:waitingAtMost:)``). Nothing is decoded.
        func reserve(_ header: ImageDecoder.OpenedImage, source data: Data) async throws(HalcyonError) {
            let frames = max(1, header.frameCount)
            let plan = MemoryEstimate.plan(options: options, width: header.width, height: header.height, format: header.format)
            guard plan.width <= maxResultSide, plan.height <= maxResultSide else {
                throw .processorError(reason: .resultTooLarge(width: plan.width, height: plan.height, frames: frames, limit: maxResultSide))
            }
            guard plan.resultPixels.saturatingMultiply(frames) <= maxResultPixels else {
                throw .processorError(reason: .resultTooLarge(width: plan.width, height: plan.height, frames: frames, limit: maxResultPixels))
            }
            try await take(MemoryEstimate.imageBytes(header, source: data, options: options, output: output))
        }

        /// Reserves the estimate of `/info` for an opened source (``MemoryEstimate/infoBytes(_:source:)``); waits,
        /// throws and suspends like ``reserve(_:source:)``, with no result-size check (nothing is encoded).
        func reserveInfo(_ header: ImageDecoder.OpenedImage, source data: Data) async throws(HalcyonError) {
            try await take(MemoryEstimate.infoBytes(header, source: data))
        }

        /// Reserves `bytes` from the budget and keeps the reservation until ``release()``.
        private func take(_ bytes: Int) async throws(HalcyonError) {
            let reservation = try await budget.reserve(bytes, waitingAtMost: wait)
            reservations.withLock { $0.append(reservation) }
        }

        /// Gives every reservation back, and large freed image buffers back to the system (over 64 MiB); called by
        /// the admission once the work has ended, from any thread.
        func release() {
            let taken = reservations.withLock { list -> [MemoryReservation] in
                defer { list.removeAll() }
                return list
            }
            taken.forEach { $0.release() }
            if taken.reduce(0, { $0 + $1.bytes }) > 64 << 20 { MallocTuning.trim() }
        }
    }
}

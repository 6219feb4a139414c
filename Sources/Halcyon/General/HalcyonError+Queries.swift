import Foundation

// MARK: - Kingfisher's error queries (`isTaskCancelled` is in HalcyonManager.swift)

extension HalcyonError {
    /// Whether this is a response error for an unacceptable HTTP status.
    public var isInvalidResponseStatusCode: Bool {
        if case .responseError(reason: .invalidHTTPStatusCode) = self { return true }
        return false
    }

    /// Whether this is a response error for the HTTP status `code`.
    public func isInvalidResponseStatusCode(_ code: Int) -> Bool {
        if case .responseError(reason: .invalidHTTPStatusCode(_, let statusCode)) = self { return statusCode == code }
        return false
    }

    /// Whether a view target dropped the result because it now shows another source.
    public var isNotCurrentTask: Bool {
        if case .imageSettingError(reason: .notCurrentSourceTask) = self { return true }
        return false
    }
}

// MARK: - Processor failures in Kingfisher's shape

extension HalcyonError {
    /// This error as the pipeline reports it for `processor` run on `item`.
    ///
    /// An engine failure (`operationFailed`) inside the processor becomes Kingfisher's
    /// `processingFailed(processor:item:)`; libvips' text goes to the `halcyon.vips` log at debug level.
    /// Every other error (cancellation, limits, corrupt or unsupported data) keeps its own reason.
    func attributed(to processor: any ImageProcessor, item: ImageProcessItem) -> HalcyonError {
        guard case .processorError(.operationFailed(let operation, let message)) = self else { return self }
        VipsRuntime.logger.debug("processor failed", metadata: [
            "processor": "\(processor.identifier)", "operation": "\(operation)", "message": "\(message)",
        ])
        return .processorError(reason: .processingFailed(processor: processor, item: item))
    }
}

extension ImageProcessor {
    /// Runs `process(item:options:)` on the caller's thread, reporting an engine failure as
    /// `processingFailed` for this processor and `item` (see ``HalcyonError/attributed(to:item:)``).
    func processAttributingFailure(item: ImageProcessItem, options: HalcyonParsedOptionsInfo) throws(HalcyonError) -> Image {
        do throws(HalcyonError) {
            return try process(item: item, options: options)
        } catch {
            throw error.attributed(to: self, item: item)
        }
    }
}

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

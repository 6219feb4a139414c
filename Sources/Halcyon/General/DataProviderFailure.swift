import Foundation

/// The error Halcyon's own data providers throw (a file that cannot be read, text that is not base64),
/// carried by `imageSettingError(.dataProviderError(provider:error:))`.
public struct DataProviderFailure: Error, Sendable, CustomStringConvertible {
    /// What went wrong, in words.
    public let message: String

    /// Makes the failure.
    public init(message: String) { self.message = message }

    public var description: String { message }
}

extension HalcyonError.ImageSettingErrorReason {
    /// The provider's error in words, for `dataProviderError` (nil for other reasons).
    public var dataProviderMessage: String? {
        guard case .dataProviderError(let provider, let error) = self else { return nil }
        return "\(provider.cacheKey): \(error)"
    }
}

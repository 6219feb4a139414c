import Foundation

/// Supplies the bytes of an image that does not come from an HTTP download.
///
/// The manager caches what a provider gives under its `cacheKey`, exactly as
/// it caches downloads, and calls `data()` only on a cache miss.
public protocol ImageDataProvider: Sendable {
    /// The key the image is cached under; must change when the bytes change.
    var cacheKey: String { get }
    /// Reads the bytes. Errors reach the caller as `imageSettingError(.dataProviderError(provider:error:))` with this
    /// provider and its error; a cancelled load ends in `requestError(.dataProviderCancelled(provider:))`.
    ///
    /// Implement this or Kingfisher's ``data(handler:)``: each defaults to the other (implementing neither recurses).
    func data() async throws -> Data
    /// Kingfisher's callback form of ``data()``: hands the bytes, or the error, to `handler` once, on any thread.
    func data(handler: @escaping @Sendable (Result<Data, any Error>) -> Void)
    /// A URL describing where the bytes live, if any.
    var contentURL: URL? { get }
}

extension ImageDataProvider {
    public var contentURL: URL? { nil }

    /// Waits for ``data(handler:)``. A cancel ends the wait at once with `CancellationError`; the callback's work is
    /// not interrupted, and what it hands over later is dropped.
    public func data() async throws -> Data {
        let waiter = ProviderDataWaiter()
        return try await withTaskCancellationHandler {
            try await withCheckedThrowingContinuation { continuation in
                waiter.start(continuation)
                data { waiter.finish($0) }
            }
        } onCancel: {
            waiter.finish(.failure(CancellationError()))
        }
    }

    /// Runs ``data()`` on a new task and hands its outcome to `handler`.
    public func data(handler: @escaping @Sendable (Result<Data, any Error>) -> Void) {
        Task {
            do {
                handler(.success(try await data()))
            } catch {
                handler(.failure(error))
            }
        }
    }
}

/// Resumes the wait of a callback provider's data once: with its result, or with the cancel that came first.
final class ProviderDataWaiter: Sendable {
    private enum Phase {
        case waiting
        case started(CheckedContinuation<Data, any Error>)
        case finished(Result<Data, any Error>?)
    }

    private let phase = Locked<Phase>(.waiting)

    /// Holds `continuation` until an outcome; resumes it at once if one came first (a cancel before the start).
    func start(_ continuation: CheckedContinuation<Data, any Error>) {
        let early: Result<Data, any Error>? = phase.withLock { phase in
            guard case .finished(let outcome) = phase else {
                phase = .started(continuation)
                return nil
            }
            phase = .finished(nil)
            return outcome
        }
        if let early { continuation.resume(with: early) }
    }

    /// Resumes the wait with `outcome` unless it was resumed already.
    func finish(_ outcome: Result<Data, any Error>) {
        let continuation: CheckedContinuation<Data, any Error>? = phase.withLock { phase in
            switch phase {
            case .waiting:
                phase = .finished(outcome)
                return nil
            case .started(let continuation):
                phase = .finished(nil)
                return continuation
            case .finished:
                return nil
            }
        }
        continuation?.resume(with: outcome)
    }
}

/// Reads an image from a local file, off the caller's thread.
public struct LocalFileImageDataProvider: ImageDataProvider {
    /// The file read.
    public let fileURL: URL
    public let cacheKey: String

    /// Makes a provider; the cache key defaults to `local://` and the file's path.
    public init(fileURL: URL, cacheKey: String? = nil) {
        self.fileURL = fileURL
        self.cacheKey = cacheKey ?? fileURL.cacheKey
    }

    public func data() async throws -> Data {
        let url = fileURL
        let provider = self
        return try await Task.detached(priority: Task.currentPriority) {
            do {
                return try Data(contentsOf: url, options: .mappedIfSafe)
            } catch {
                let failure = DataProviderFailure(message: "cannot read \(url.path): \(error.localizedDescription)")
                throw HalcyonError.imageSettingError(reason: .dataProviderError(provider: provider, error: failure))
            }
        }.value
    }

    public var contentURL: URL? { fileURL }
}

/// Decodes an image from base64 text (a `data:` URL prefix is accepted).
public struct Base64ImageDataProvider: ImageDataProvider {
    /// The base64 text.
    public let base64String: String
    public let cacheKey: String

    /// Makes a provider with an explicit cache key (the text can be long).
    public init(base64String: String, cacheKey: String) {
        self.base64String = base64String
        self.cacheKey = cacheKey
    }

    public func data() async throws -> Data {
        var text = Substring(base64String)
        if text.hasPrefix("data:"), let comma = text.firstIndex(of: ",") {
            text = text[text.index(after: comma)...]
        }
        guard let data = Data(base64Encoded: String(text), options: .ignoreUnknownCharacters) else {
            let failure = DataProviderFailure(message: "the text for \(cacheKey) is not valid base64")
            throw HalcyonError.imageSettingError(reason: .dataProviderError(provider: self, error: failure))
        }
        return data
    }
}

/// Hands over bytes already in memory.
public struct RawImageDataProvider: ImageDataProvider {
    /// The bytes.
    public let rawData: Data
    public let cacheKey: String

    /// Makes a provider.
    public init(data: Data, cacheKey: String) {
        rawData = data
        self.cacheKey = cacheKey
    }

    public func data() async throws -> Data { rawData }
}

import Hummingbird
import Halcyon
import NIOCore

/// The request context of the image service: Hummingbird's core context, the
/// client's connection (its hang-up cancels the request's work) and a record
/// the handlers fill for the request log.
public struct ServerRequestContext: RequestContext {
    /// Hummingbird's per-request storage.
    public var coreContext: CoreRequestContextStorage
    /// The client's connection.
    public let channel: any Channel
    /// What the handlers report about the request (route, cache tier, error code).
    public let record = RequestRecord()

    /// Makes the context for a request arriving on `source.channel`.
    public init(source: ApplicationRequestContextSource) {
        coreContext = CoreRequestContextStorage(source: source)
        channel = source.channel
    }
}

/// What a request's handlers report for the log line and metrics. One lock guards it.
public final class RequestRecord: Sendable {
    private struct Fields {
        var route = "other"
        var cacheTier: String?
        var errorCode: String?
    }

    private let fields = Locked(Fields())

    /// The route that answered: `image`, `health`, `metrics` or `other`.
    public var route: String {
        get { fields.withLock { $0.route } }
        set { fields.withLock { $0.route = newValue } }
    }

    /// Where an image came from: `response`, `memory`, `disk` or `none` (made now); nil before one is known.
    public var cacheTier: String? {
        get { fields.withLock { $0.cacheTier } }
        set { fields.withLock { $0.cacheTier = newValue } }
    }

    /// The error code of an error answer.
    public var errorCode: String? {
        get { fields.withLock { $0.errorCode } }
        set { fields.withLock { $0.errorCode = newValue } }
    }
}

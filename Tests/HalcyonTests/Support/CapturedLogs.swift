import Foundation
import Halcyon
import Logging

/// A swift-log handler that keeps every message with its metadata, for tests that check what is logged.
struct CapturedLogs: LogHandler {
    /// The messages so far, each with its metadata flattened into "key=value" text.
    final class Store: Sendable {
        private let lines = Locked<[String]>([])
        func append(_ line: String) { lines.withLock { $0.append(line) } }
        var all: [String] { lines.withLock { $0 } }
    }

    let store: Store
    var metadata: Logger.Metadata = [:]
    var logLevel: Logger.Level = .trace

    /// A logger whose messages land in `store`.
    static func logger(into store: Store) -> Logger {
        Logger(label: "captured") { _ in CapturedLogs(store: store) }
    }

    subscript(metadataKey key: String) -> Logger.Metadata.Value? {
        get { metadata[key] }
        set { metadata[key] = newValue }
    }

    func log(level: Logger.Level, message: Logger.Message, metadata: Logger.Metadata?, source: String, file: String, function: String, line: UInt) {
        let fields = (metadata ?? [:]).sorted { $0.key < $1.key }.map { "\($0.key)=\($0.value)" }.joined(separator: " ")
        store.append("\(message) \(fields)")
    }
}

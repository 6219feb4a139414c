import Foundation
import Halcyon
import Hummingbird
import NIOCore

/// Encoded responses kept in memory, so a repeated request costs a lookup,
/// not an encode. Least-recently-used entries go first past the byte limit;
/// entries expire after `lifetime`. One lock.
///
/// The service keys it by the request as sent (path and `Accept`), so a hit
/// is answered before the path is parsed or its signature checked again: the
/// same path was verified when the entry was made.
public final class ResponseCache: Sendable {
    /// One encoded answer.
    public struct Entry: Sendable {
        /// The body.
        public let body: Data
        /// The body as a NIO buffer, made once; responses share its storage.
        public let buffer: ByteBuffer
        /// Its content type.
        public let contentType: String
        /// The strong ETag, quoted.
        public let etag: String
        /// When it was made.
        public let created: Date
        /// `created` as an HTTP date, for `Last-Modified` (formatted once, not per request).
        public let lastModified: String
        /// The headers of a 304 for this entry (the service fills them in once).
        public var headers = HTTPFields()
        /// The headers of a 200: ``headers`` plus content type and length.
        public var fullHeaders = HTTPFields()

        /// Makes an entry made now.
        public init(body: Data, contentType: String, etag: String, created: Date = Date()) {
            self.body = body
            buffer = ByteBuffer(bytes: body)
            self.contentType = contentType
            self.etag = etag
            self.created = created
            lastModified = ResponseCache.httpDate(created)
        }
    }

    /// An HTTP date (RFC 9110 IMF-fixdate).
    public static func httpDate(_ date: Date) -> String {
        let formatter = DateFormatter()
        formatter.locale = Locale(identifier: "en_US_POSIX")
        formatter.timeZone = TimeZone(identifier: "GMT")
        formatter.dateFormat = "EEE, dd MMM yyyy HH:mm:ss 'GMT'"
        return formatter.string(from: date)
    }

    private struct State {
        var entries: [String: (entry: Entry, lastUse: UInt64)] = [:]
        var bytes = 0
        var tick: UInt64 = 0
    }

    private let state = Locked(State())
    private let limit: Int
    private let lifetime: TimeInterval

    /// Makes a cache of at most `limit` bytes, entries living `lifetime` seconds.
    public init(limit: Int, lifetime: TimeInterval) {
        self.limit = limit
        self.lifetime = lifetime
    }

    /// The entry for `key`, if fresh.
    public func value(for key: String, now: Date = Date()) -> Entry? {
        state.withLock { state in
            guard let found = state.entries[key] else { return nil }
            if now.timeIntervalSince(found.entry.created) > lifetime {
                state.entries[key] = nil
                state.bytes -= found.entry.body.count
                return nil
            }
            state.tick += 1
            state.entries[key]?.lastUse = state.tick
            return found.entry
        }
    }

    /// Stores `entry`; skipped when larger than a quarter of the limit.
    public func store(_ entry: Entry, for key: String) {
        guard entry.body.count <= limit / 4 else { return }
        state.withLock { state in
            if let old = state.entries[key] { state.bytes -= old.entry.body.count }
            state.tick += 1
            state.entries[key] = (entry, state.tick)
            state.bytes += entry.body.count
            while state.bytes > limit, let oldest = state.entries.min(by: { $0.value.lastUse < $1.value.lastUse }) {
                state.entries[oldest.key] = nil
                state.bytes -= oldest.value.entry.body.count
            }
        }
    }
}

import Foundation
import Halcyon
import Hummingbird
import NIOCore
import NIOFoundationCompat

/// Encoded responses kept in memory, so a repeated request costs a lookup,
/// not an encode. Least-recently-used entries go first past the byte limit,
/// which counts each entry's body, key and headers (``cost(of:key:)``);
/// entries expire after `lifetime`. One lock.
///
/// The service keys it by the request as sent (path and `Accept`), so a hit
/// is answered before the path is parsed or its signature checked again: the
/// same path was verified when the entry was made.
public final class ResponseCache: Sendable {
    /// One encoded answer.
    public struct Entry: Sendable {
        /// The body; it shares ``buffer``'s storage (one copy of the bytes).
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
        /// The URL's `exp:` (Unix time) when it has one: after it, the entry answers nothing (the request is refused).
        public var expires: Int?

        /// Makes an entry made now.
        public init(body: Data, contentType: String, etag: String, created: Date = Date()) {
            let buffer = ByteBuffer(bytes: body)
            self.buffer = buffer
            self.body = Data(buffer: buffer, byteTransferStrategy: .noCopy)
            self.contentType = contentType
            self.etag = etag
            self.created = created
            lastModified = ResponseCache.httpDate(created)
        }
    }

    private static let weekdays = ["Sun", "Mon", "Tue", "Wed", "Thu", "Fri", "Sat"]
    private static let months = ["Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec"]

    /// An HTTP date (RFC 9110 IMF-fixdate), formatted by hand: no `DateFormatter`, so no ICU, per entry.
    ///
    /// Dates before 1970 or after 9999 (or not finite, as a damaged stored entry may carry) are clamped to that range.
    public static func httpDate(_ date: Date) -> String {
        let interval = date.timeIntervalSince1970
        let clamped = interval.isFinite ? min(max(interval, 0), 253_402_300_799) : 0
        var seconds = time_t(clamped.rounded(.down))
        var fields = tm()
        guard gmtime_r(&seconds, &fields) != nil else { return "Thu, 01 Jan 1970 00:00:00 GMT" }
        func two(_ value: Int32) -> String { value < 10 ? "0\(value)" : "\(value)" }
        let year = String(Int(fields.tm_year) + 1900)
        return "\(weekdays[Int(fields.tm_wday) % 7]), \(two(fields.tm_mday)) \(months[Int(fields.tm_mon) % 12]) \(year) "
            + "\(two(fields.tm_hour)):\(two(fields.tm_min)):\(two(fields.tm_sec)) GMT"
    }

    /// What an entry is counted as against the limit: the storage of its body (a buffer's capacity can exceed
    /// the body), its key, and 1 KiB for its two header sets and the bookkeeping (about what they take).
    static func cost(of entry: Entry, key: String) -> Int {
        entry.buffer.capacity + key.utf8.count + 1024
    }

    private struct State {
        var entries: [String: (entry: Entry, lastUse: UInt64, cost: Int)] = [:]
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
        // One hash of the key under the lock: the index serves the read and the use stamp.
        state.withLock { state in
            guard let index = state.entries.index(forKey: key) else { return nil }
            let found = state.entries.values[index]
            if now.timeIntervalSince(found.entry.created) > lifetime {
                state.entries.remove(at: index)
                state.bytes -= found.cost
                return nil
            }
            state.tick += 1
            state.entries.values[index].lastUse = state.tick
            return found.entry
        }
    }

    /// Stores `entry`; skipped when larger than a quarter of the limit.
    public func store(_ entry: Entry, for key: String) {
        let cost = Self.cost(of: entry, key: key)
        guard cost <= limit / 4 else { return }
        state.withLock { state in
            if let old = state.entries[key] { state.bytes -= old.cost }
            state.tick += 1
            state.entries[key] = (entry, state.tick, cost)
            state.bytes += cost
            while state.bytes > limit, let oldest = state.entries.min(by: { $0.value.lastUse < $1.value.lastUse }) {
                state.entries[oldest.key] = nil
                state.bytes -= oldest.value.cost
            }
        }
    }

    /// What the entries held now count for (see ``cost(of:key:)``); never more than the limit.
    var heldBytes: Int { state.withLock { $0.bytes } }
}

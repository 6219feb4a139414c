import Foundation
import Halcyon
import Hummingbird
import NIOCore
import NIOFoundationCompat

/// Encoded responses kept in memory, so a repeated request costs a lookup,
/// not an encode. Least-recently-used entries go first past the byte limit,
/// which counts each entry's body, key and headers (`cost(of:key:)`);
/// entries expire after `lifetime`. One lock; a lookup, a store and each
/// eviction take constant time however many entries the cache holds (the
/// entries are linked in order of use), so a flood of distinct small answers
/// cannot make every store walk the whole cache under the lock.
///
/// The service keys it by the request as sent (``Key``: the path, and the format `Accept` negotiates), so a
/// hit is answered before the path is parsed or its signature checked again: the same path was verified when
/// the entry was made.
public final class ResponseCache: Sendable {
    /// What an answer is kept under: the path as sent and the output format its `Accept` header negotiates.
    ///
    /// The negotiated format, not the header's wording: requests whose `Accept` headers differ only in
    /// wording share one entry, and a client cannot flush the cache by varying them.
    public struct Key: Hashable, Sendable {
        /// The request's path as sent (signature, options, source, extension).
        public let path: String
        /// The format `Accept` negotiates; nil when it names none this server writes (or the path names one).
        public let negotiatedFormat: ImageFormat?

        /// Makes the key of `path` with `negotiatedFormat`.
        public init(path: String, negotiatedFormat: ImageFormat? = nil) {
            self.path = path
            self.negotiatedFormat = negotiatedFormat
        }
    }

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
        /// `created` in whole Unix seconds, as `Last-Modified` says, for `If-Modified-Since`.
        public let lastModifiedSeconds: Int
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
            lastModifiedSeconds = HTTPDate.seconds(of: created)
            lastModified = HTTPDate.format(lastModifiedSeconds)
        }
    }

    /// An HTTP date (RFC 9110 IMF-fixdate), formatted by hand: no `DateFormatter`, so no ICU, per entry.
    ///
    /// Dates before 1970 or after 9999 (or not finite, as a damaged stored entry may carry) are clamped to that range.
    public static func httpDate(_ date: Date) -> String {
        HTTPDate.format(HTTPDate.seconds(of: date))
    }

    /// What an entry is counted as against the limit: the storage of its body (a buffer's capacity can exceed
    /// the body), its key, and 1 KiB for its two header sets and the bookkeeping (about what they take).
    static func cost(of entry: Entry, key: Key) -> Int {
        entry.buffer.capacity + key.path.utf8.count + 1024
    }

    /// The entries in order of use; a hit hashes its key once, for the read and the move to the recent end.
    private let state = Locked(LRUList<Key, Entry>())
    private let limit: Int
    private let lifetime: TimeInterval

    /// Makes a cache of at most `limit` bytes, entries living `lifetime` seconds.
    public init(limit: Int, lifetime: TimeInterval) {
        self.limit = limit
        self.lifetime = lifetime
    }

    /// The entry for `key`, if fresh: younger than the lifetime and, when its URL has an `exp:` time, not past it.
    ///
    /// An entry that is no longer fresh is removed, so answers to expired URLs do not hold memory until evicted.
    public func value(for key: Key, now: Date = Date()) -> Entry? {
        // One hash of the key under the lock: the slot serves the read and the move to the recent end.
        // An expired entry comes out of the lock with the answer and is released here, not under the lock.
        state.withLock { state -> (found: Entry?, expired: Entry?) in
            guard let slot = state.slot(for: key), let entry = state.value(at: slot) else { return (nil, nil) }
            if now.timeIntervalSince(entry.created) > lifetime || Self.isPast(entry.expires, now: now) {
                return (nil, state.remove(slot))
            }
            state.touch(slot)
            return (entry, nil)
        }.found
    }

    /// Stores `entry`; when it is larger than a quarter of the limit it is not kept, and neither is an older
    /// entry under `key` (which would otherwise go on answering instead of it).
    public func store(_ entry: Entry, for key: Key) {
        let cost = Self.cost(of: entry, key: key)
        guard cost <= limit / 4 else {
            _ = state.withLock { $0.removeValue(forKey: key) }
            return
        }
        // The evicted entries come out of the lock and are released here, not while hits wait for it.
        _ = state.withLock { state -> (replaced: Entry?, evicted: [Entry]) in
            let replaced = state.insert(entry, for: key, cost: cost)
            return (replaced, state.evictOldest(whileCostAbove: limit))
        }
    }

    /// Whether an `exp:` time (Unix seconds) is before `now`; false when there is none.
    static func isPast(_ expires: Int?, now: Date) -> Bool {
        guard let expires else { return false }
        return Double(expires) < now.timeIntervalSince1970
    }

    /// What the entries held now count for (see ``cost(of:key:)``); never more than the limit.
    var heldBytes: Int { state.withLock { $0.totalCost } }

    /// How many entries the cache holds, and how many slots it has made (for tests: freed slots are reused).
    var counts: (entries: Int, slots: Int) { state.withLock { ($0.count, $0.slotCount) } }
}

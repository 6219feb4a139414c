import Foundation
import Halcyon
import Hummingbird
import NIOCore
import NIOFoundationCompat

/// Encoded responses kept in memory, so a repeated request costs a lookup,
/// not an encode. Least-recently-used entries go first past the byte limit,
/// which counts each entry's body, key and headers (``cost(of:key:)``);
/// entries expire after `lifetime`. One lock; a lookup, a store and each
/// eviction take constant time however many entries the cache holds (the
/// entries are linked in order of use), so a flood of distinct small answers
/// cannot make every store walk the whole cache under the lock.
///
/// The service keys it by the request as sent (the path, and the format `Accept` negotiates), so a hit
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

    /// The entries in order of use: a doubly linked list through an array of slots, from the least recently
    /// used (`head`) to the most (`tail`), and a dictionary from key to slot. A hit moves its slot to the tail
    /// and a store appends one, without hashing again; eviction unlinks the head. Freed slots are reused.
    private struct State {
        struct Slot {
            var key: String
            var entry: Entry?
            var cost: Int
            var previous: Int
            var next: Int
        }

        var slots: [Slot] = []
        var index: [String: Int] = [:]
        var unused: [Int] = []
        var head = -1
        var tail = -1
        var bytes = 0

        /// The slot of `key`'s entry, if there is one.
        func slot(for key: String) -> Int? { index[key] }

        /// Moves `slot` to the most recently used end.
        mutating func touch(_ slot: Int) {
            guard slot != tail else { return }
            unlink(slot)
            append(slot)
        }

        /// Puts `entry` in `key`'s slot, a new one when it has none, as the most recently used.
        mutating func insert(_ entry: Entry, for key: String, cost: Int) {
            if let slot = index[key] {
                bytes += cost - slots[slot].cost
                slots[slot].entry = entry
                slots[slot].cost = cost
                touch(slot)
                return
            }
            let fresh = Slot(key: key, entry: entry, cost: cost, previous: -1, next: -1)
            let slot: Int
            if let reused = unused.popLast() {
                slots[reused] = fresh
                slot = reused
            } else {
                slots.append(fresh)
                slot = slots.count - 1
            }
            index[key] = slot
            bytes += cost
            append(slot)
        }

        /// Takes the entry out of `slot` and frees the slot; the caller releases the entry after unlocking.
        mutating func remove(_ slot: Int) -> Entry? {
            unlink(slot)
            index[slots[slot].key] = nil
            bytes -= slots[slot].cost
            let entry = slots[slot].entry
            slots[slot] = Slot(key: "", entry: nil, cost: 0, previous: -1, next: -1)
            unused.append(slot)
            return entry
        }

        /// Removes least-recently-used entries until `bytes` is at most `limit` and gives them back, so their
        /// memory (a large body may be unmapped) is released after the lock.
        mutating func evict(downTo limit: Int) -> [Entry] {
            var evicted: [Entry] = []
            while bytes > limit, head >= 0, let entry = remove(head) { evicted.append(entry) }
            return evicted
        }

        private mutating func unlink(_ slot: Int) {
            let (previous, next) = (slots[slot].previous, slots[slot].next)
            if previous >= 0 { slots[previous].next = next } else { head = next }
            if next >= 0 { slots[next].previous = previous } else { tail = previous }
        }

        private mutating func append(_ slot: Int) {
            slots[slot].previous = tail
            slots[slot].next = -1
            if tail >= 0 { slots[tail].next = slot } else { head = slot }
            tail = slot
        }
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
        // One hash of the key under the lock: the slot serves the read and the move to the recent end.
        // An expired entry comes out of the lock with the answer and is released here, not under the lock.
        state.withLock { state -> (found: Entry?, expired: Entry?) in
            guard let slot = state.slot(for: key), let entry = state.slots[slot].entry else { return (nil, nil) }
            if now.timeIntervalSince(entry.created) > lifetime { return (nil, state.remove(slot)) }
            state.touch(slot)
            return (entry, nil)
        }.found
    }

    /// Stores `entry`; when it is larger than a quarter of the limit it is not kept, and neither is an older
    /// entry under `key` (which would otherwise go on answering instead of it).
    public func store(_ entry: Entry, for key: String) {
        let cost = Self.cost(of: entry, key: key)
        guard cost <= limit / 4 else {
            _ = state.withLock { state in state.slot(for: key).flatMap { state.remove($0) } }
            return
        }
        // The evicted entries come out of the lock and are released here, not while hits wait for it.
        _ = state.withLock { state -> [Entry] in
            state.insert(entry, for: key, cost: cost)
            return state.evict(downTo: limit)
        }
    }

    /// What the entries held now count for (see ``cost(of:key:)``); never more than the limit.
    var heldBytes: Int { state.withLock { $0.bytes } }

    /// How many entries the cache holds, and how many slots it has made (for tests: freed slots are reused).
    var counts: (entries: Int, slots: Int) { state.withLock { ($0.index.count, $0.slots.count) } }
}

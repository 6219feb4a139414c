import Foundation
import Synchronization

/// Partial bodies of interrupted downloads, kept so the next request can resume with Range.
///
/// Like Nuke's resumable data: a body is kept only when the server announced
/// `Accept-Ranges: bytes` and a validator (a strong ETag, or Last-Modified).
/// Bounded in entries and bytes; the oldest entries go first. One lock.
final class ResumableDataStore: Sendable {
    struct Entry: Sendable {
        let data: Data
        let validator: String
    }

    private let maxEntries: Int
    private let maxBytes: Int
    private let state = Locked(State())
    /// How many entries are kept; written under the lock, read without it so a download finds an empty store
    /// without taking the lock or hashing its URL.
    private let entryCount = Atomic<Int>(0)

    private struct State {
        var entries: [URL: Entry] = [:]
        var order: [URL] = []
        var bytes = 0
    }

    init(maxEntries: Int = 32, maxBytes: Int = 64 * 1024 * 1024) {
        self.maxEntries = maxEntries
        self.maxBytes = maxBytes
    }

    /// Removes and returns the entry for `url`.
    func take(_ url: URL) -> Entry? {
        guard entryCount.load(ordering: .acquiring) > 0 else { return nil }
        return state.withLock { state in
            guard let entry = state.entries.removeValue(forKey: url) else { return nil }
            state.order.removeAll { $0 == url }
            state.bytes -= entry.data.count
            entryCount.store(state.entries.count, ordering: .releasing)
            return entry
        }
    }

    /// Keeps `entry` for `url`, replacing an older one and evicting the oldest beyond the limits.
    func store(_ entry: Entry, for url: URL) {
        guard !entry.data.isEmpty, entry.data.count <= maxBytes else { return }
        state.withLock { state in
            if let old = state.entries.removeValue(forKey: url) {
                state.order.removeAll { $0 == url }
                state.bytes -= old.data.count
            }
            state.entries[url] = entry
            state.order.append(url)
            state.bytes += entry.data.count
            while state.order.count > maxEntries || state.bytes > maxBytes, !state.order.isEmpty {
                let oldest = state.order.removeFirst()
                if let evicted = state.entries.removeValue(forKey: oldest) { state.bytes -= evicted.data.count }
            }
            entryCount.store(state.entries.count, ordering: .releasing)
        }
    }

    /// Whether an entry for `url` is kept.
    func contains(_ url: URL) -> Bool {
        state.withLock { $0.entries[url] != nil }
    }

    /// The validator to resume a body received with `response`, or nil when it cannot be resumed.
    static func validator(for response: ImageDownloadResponse) -> String? {
        // A coded body's bytes are its decoded form, and a Range counts in the coded one: such a body is not resumed.
        guard response.statusCode == 200 || response.statusCode == 206, response.headers["content-encoding"] == nil,
              let ranges = response.headers["accept-ranges"], ranges.lowercased() == "bytes" else { return nil }
        if let etag = response.headers["etag"], !etag.hasPrefix("W/") { return etag }
        return response.headers["last-modified"]
    }
}

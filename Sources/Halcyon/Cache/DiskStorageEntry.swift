import Foundation

extension DiskStorage {
    // MARK: - Entry

    /// A disk entry read back with everything stored about it.
    public struct Entry: Sendable {
        /// The stored bytes.
        public let data: Data
        /// The HTTP metadata and original key stored with the bytes.
        public let metadata: CacheEntryMetadata
        /// When the entry was written.
        public let storedDate: Date
        /// When the entry expires (after any extension this read made).
        public let expirationDate: Date
        /// When the entry was last read or written before this read.
        public let lastAccessDate: Date
        /// The file holding the entry.
        public let fileURL: URL

        /// Whether the entry is expired at `date`.
        public func isExpired(at date: Date = Date()) -> Bool { expirationDate <= date }
    }
}

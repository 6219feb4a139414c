import Crypto
import Foundation
import Synchronization
#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// Namespace of the on-disk cache layer, in Kingfisher's `DiskStorage` shape.
public enum DiskStorage {
    /// A directory of cache entries, one file per key, safe across threads and processes.
    ///
    /// Each file holds a checksummed header (``CacheEntryMetadata``, stored
    /// and expiration dates) followed by the payload. Writes go to a temporary
    /// file in the same directory and are renamed into place, so readers — in
    /// this process or another — see the old entry, the new one, or none, never
    /// a torn file. A file that fails validation (wrong size, bad checksum) reads
    /// as a miss and is deleted. The payload checksum is verified on the first
    /// read of each file version in this process and skipped on later hits of
    /// the unchanged file (same inode, size and change time; see
    /// `VerifiedPayloads`), unless `verifiesPayloadOnEveryRead` is set.
    /// Expiration lives in the header, never in file
    /// dates; the modification time records the last access and drives the LRU
    /// trim. When a store takes the directory past `sizeLimit`, a background
    /// trim deletes least-recently-used entries down to half the limit. A
    /// deleted directory is recreated by the next store.
    ///
    /// Every method does blocking file I/O on the caller's thread; call them off
    /// latency-sensitive threads (``ImageCache`` does). Thread-safe: files are
    /// only ever replaced atomically, and the size bookkeeping is under one lock.
    public final class Backend: Sendable {
        /// The configuration this storage was made with.
        public let config: Config
        /// The directory holding the entry files.
        public let directoryURL: URL

        private let directoryPath: String
        private let clock: CacheClock
        private let syncedWrites = Atomic<Int>(0)

        /// How many entries this storage has fsynced since it was made (for tests and metrics).
        public var syncedWriteCount: Int { syncedWrites.load(ordering: .relaxed) }
        private let state = Locked(SizeState())
        private let verifiedPayloads = VerifiedPayloads()

        /// Size bookkeeping and the background trim, guarded by `state`.
        private struct SizeState {
            /// Bytes in the directory as far as this process knows; `nil` until first scanned.
            var knownSize: Int?
            var trimTask: Task<Void, Never>?
            var trimAgain = false
        }

        /// Makes a storage for `config.name` under `config.directory`; the directory is created on first store.
        ///
        /// Throws `.cacheError(.invalidConfiguration)` for an empty name or one
        /// with `/`, or a `pathExtension` that is not 1–20 ASCII letters or
        /// digits. `clock` gives "now" for expiration and last access.
        public convenience init(config: Config, clock: CacheClock = .system) throws(HalcyonError) {
            let name = config.name
            guard !name.isEmpty, name != ".", name != "..", !name.contains("/"), !name.contains("\0") else {
                throw .cacheError(reason: .invalidConfiguration(message: "disk cache name \"\(name)\" must be a non-empty file name without \"/\""))
            }
            if let ext = config.pathExtension, !Self.isValidExtension(ext) {
                throw .cacheError(reason: .invalidConfiguration(message: "path extension \"\(ext)\" must be 1-20 ASCII letters or digits"))
            }
            self.init(validatedConfig: config, clock: clock)
        }

        /// Makes a storage from a config whose name and extension are already known to be valid.
        init(validatedConfig config: Config, clock: CacheClock) {
            self.config = config
            self.clock = clock
            let parent = config.directory ?? Config.defaultParentDirectory()
            self.directoryURL = parent.appendingPathComponent(config.name, isDirectory: true)
            self.directoryPath = directoryURL.path
        }

        // MARK: - Storing

        /// Stores `value` under `key`, atomically replacing any previous entry.
        ///
        /// `expiration` defaults to `config.expiration`; an already expired one
        /// removes the entry instead. `metadata` is kept with the entry for
        /// revalidation; its `originalKey` defaults to `key`. The directory is
        /// (re)created when missing. Throws `.cacheError` with
        /// `.cannotCreateDirectory` or `.cannotWriteFile` (disk full,
        /// permissions...), in which case no partial file is left behind.
        /// `syncsWrites`, when given, overrides `config.syncsWrites` for this entry.
        public func store(
            value: Data,
            forKey key: String,
            expiration: StorageExpiration? = nil,
            metadata: CacheEntryMetadata? = nil,
            forcedExtension: String? = nil,
            syncsWrites: Bool? = nil
        ) throws(HalcyonError) {
            let now = clock.now()
            let expiration = expiration ?? config.expiration
            let expiresAt = expiration.estimatedExpirationSince(now)
            guard expiresAt > now else {
                try remove(forKey: key, forcedExtension: forcedExtension)
                return
            }
            var metadata = metadata ?? CacheEntryMetadata()
            if metadata.originalKey == nil { metadata.originalKey = key }
            let payloadHash = value.withUnsafeBytes { EntryChecksum.hash($0) }
            let header = DiskEntryHeader(
                metadata: metadata, payloadLength: value.count, storedDate: now,
                expirationDate: expiresAt, payloadHash: payloadHash, lifetime: expiration.slidingLifetime)
            let fileName = cacheFileName(forKey: key, forcedExtension: forcedExtension)
            let (written, replaced) = try writeAtomically(fileName: fileName, header: header.encoded(), payload: value, now: now,
                                                          syncs: syncsWrites ?? config.syncsWrites)
            noteStored(bytes: written, replacing: replaced)
        }

        private func writeAtomically(fileName: String, header: [UInt8], payload: Data, now: Date, syncs: Bool) throws(HalcyonError) -> (Int, Int) {
            let finalPath = directoryPath + "/" + fileName
            var attempt = 0
            while true {
                attempt += 1
                let tempPath = directoryPath + "/." + fileName + "." + String(getpid()) + "."
                    + String(UInt64.random(in: 0...UInt64.max), radix: 36) + ".tmp"
                let fd = DiskFile.open(tempPath, O_WRONLY | O_CREAT | O_EXCL)
                if fd < 0 {
                    if errno == ENOENT || errno == ENOTDIR, attempt == 1 {
                        try createDirectory()
                        continue
                    }
                    throw .cacheError(reason: .cannotWriteFile(path: tempPath, message: DiskFile.lastError()))
                }
                var written = header.withUnsafeBytes { DiskFile.write(fd: fd, $0, offset: 0) }
                if written {
                    written = payload.withUnsafeBytes { DiskFile.write(fd: fd, $0, offset: header.count) }
                }
                if written, syncs {
                    written = fsync(fd) == 0
                    if written { syncedWrites.add(1, ordering: .relaxed) }
                }
                if written { DiskFile.setTimes(fd: fd, to: now) }
                let writeError = written ? "" : DiskFile.lastError()
                DiskFile.close(fd)
                guard written else {
                    _ = unlink(tempPath)
                    throw .cacheError(reason: .cannotWriteFile(path: finalPath, message: writeError))
                }
                let replaced = DiskFile.status(path: finalPath)?.size ?? 0
                if rename(tempPath, finalPath) != 0 {
                    let code = errno
                    let message = DiskFile.lastError()
                    _ = unlink(tempPath)
                    if code == ENOENT, attempt == 1 {
                        try createDirectory()
                        continue
                    }
                    throw .cacheError(reason: .cannotWriteFile(path: finalPath, message: message))
                }
                if syncs { syncDirectory() }
                return (header.count + payload.count, replaced)
            }
        }

        private func createDirectory() throws(HalcyonError) {
            do {
                try FileManager.default.createDirectory(atPath: directoryPath, withIntermediateDirectories: true)
            } catch {
                throw .cacheError(reason: .cannotCreateDirectory(path: directoryPath, message: "\(error)"))
            }
            state.withLock { $0.knownSize = nil }
        }

        private func syncDirectory() {
            let fd = DiskFile.open(directoryPath, O_RDONLY)
            guard fd >= 0 else { return }
            _ = fsync(fd)
            DiskFile.close(fd)
        }

        // MARK: - Reading

        /// The payload stored under `key`, or `nil` when there is none, it expired, or it is corrupt.
        ///
        /// Validates the header, the size and the payload checksum; a corrupt
        /// file is deleted. `extendingExpiration` (default `.cacheTime`) slides
        /// the expiration forward in place; the last-access time is updated too,
        /// both at most once per `config.accessUpdateInterval`. Throws
        /// `.cacheError(.cannotReadFile)` only for I/O failures other than a
        /// missing file.
        public func value(
            forKey key: String,
            forcedExtension: String? = nil,
            extendingExpiration: ExpirationExtending = .cacheTime
        ) throws(HalcyonError) -> Data? {
            let path = directoryPath + "/" + cacheFileName(forKey: key, forcedExtension: forcedExtension)
            return try readEntry(atPath: path, includingExpired: false, extending: extendingExpiration, decodingMetadata: false)?.data
        }

        /// The entry stored under `key` with its metadata and dates, or `nil` when there is none or it is corrupt.
        ///
        /// With `includingExpired`, an expired entry is returned too (its
        /// ETag and Last-Modified are what a revalidation request needs), and
        /// is not extended. Otherwise behaves as ``value(forKey:forcedExtension:extendingExpiration:)``.
        public func entry(
            forKey key: String,
            forcedExtension: String? = nil,
            includingExpired: Bool = false,
            extendingExpiration: ExpirationExtending = .cacheTime
        ) throws(HalcyonError) -> Entry? {
            let path = directoryPath + "/" + cacheFileName(forKey: key, forcedExtension: forcedExtension)
            guard let read = try readEntry(atPath: path, includingExpired: includingExpired, extending: extendingExpiration,
                                           decodingMetadata: true) else { return nil }
            return Entry(data: read.data, metadata: read.header.metadata, storedDate: read.header.storedDate,
                         expirationDate: read.header.expirationDate, lastAccessDate: read.lastAccessDate,
                         fileURL: URL(fileURLWithPath: path))
        }

        /// What one read of an entry file produced.
        private struct ReadResult {
            var data: Data
            var header: DiskEntryHeader
            var lastAccessDate: Date
        }

        private func readEntry(
            atPath path: String, includingExpired: Bool, extending: ExpirationExtending, decodingMetadata: Bool
        ) throws(HalcyonError) -> ReadResult? {
            let now = clock.now()
            var writable = true
            var fd = DiskFile.open(path, O_RDWR)
            if fd < 0, errno == EACCES || errno == EROFS || errno == EPERM {
                writable = false
                fd = DiskFile.open(path, O_RDONLY)
            }
            guard fd >= 0 else {
                if errno == ENOENT || errno == ENOTDIR || errno == EISDIR { return nil }
                throw .cacheError(reason: .cannotReadFile(path: path, message: DiskFile.lastError()))
            }
            defer { DiskFile.close(fd) }
            guard let status = DiskFile.status(fd: fd) else {
                throw .cacheError(reason: .cannotReadFile(path: path, message: DiskFile.lastError()))
            }
            guard status.isRegularFile else { return nil }
            let size = status.size
            guard size >= DiskEntryHeader.preambleSize else {
                discardCorrupt(path: path, status: status)
                return nil
            }
            if size > Self.singleReadLimit, !hasPlausibleLayout(fd: fd, size: size) {
                discardCorrupt(path: path, status: status)
                return nil
            }
            guard let buffer = malloc(size) else {
                throw .cacheError(reason: .cannotReadFile(path: path, message: "cannot allocate \(size) bytes"))
            }
            var handedOver = false
            defer { if !handedOver { free(buffer) } }
            guard DiskFile.read(fd: fd, into: buffer, count: size, offset: 0) == size else {
                discardCorrupt(path: path, status: status)
                return nil
            }
            let bytes = UnsafeRawBufferPointer(start: buffer, count: size)
            let layout: DiskEntryHeader.Layout
            var header: DiskEntryHeader
            do {
                layout = try DiskEntryHeader.layout(of: bytes, fileSize: size)
                header = try decodeHeader(fd: fd, buffer: buffer, bytes: bytes, layout: layout, decodingMetadata: decodingMetadata)
            } catch {
                discardCorrupt(path: path, status: status)
                return nil
            }
            let identity = VerifiedPayloads.Identity(status, payloadHash: header.payloadHash)
            if config.verifiesPayloadOnEveryRead || !verifiedPayloads.contains(identity) {
                let payload = UnsafeRawBufferPointer(rebasing: bytes[layout.headerLength...])
                guard EntryChecksum.hash(payload) == header.payloadHash else {
                    discardCorrupt(path: path, status: status)
                    return nil
                }
                verifiedPayloads.insert(identity)
            }
            let expired = header.expirationDate <= now
            if expired && !includingExpired { return nil }
            if !expired, writable {
                let metadataBytes = UnsafeRawBufferPointer(rebasing: bytes[DiskEntryHeader.preambleSize..<layout.headerLength])
                let wrote: Bool
                (header, wrote) = recordAccess(fd: fd, header: header, metadataBytes: metadataBytes,
                                               lastAccess: status.modificationDate, now: now, extending: extending)
                if wrote, let touched = DiskFile.status(fd: fd) {
                    verifiedPayloads.insert(VerifiedPayloads.Identity(touched, payloadHash: header.payloadHash))
                }
            }
            handedOver = true
            let data = Data(bytesNoCopy: buffer + layout.headerLength, count: layout.payloadLength,
                            deallocator: .custom { _, _ in free(buffer) })
            return ReadResult(data: data, header: header, lastAccessDate: status.modificationDate)
        }

        /// Files up to this size are read in one call; larger ones have their preamble checked before allocating.
        static let singleReadLimit = 8 << 20

        /// Whether the preamble of a large file announces exactly its size, so reading it whole is worth the memory.
        private func hasPlausibleLayout(fd: Int32, size: Int) -> Bool {
            var preamble = [UInt8](repeating: 0, count: DiskEntryHeader.preambleSize)
            let got = preamble.withUnsafeMutableBytes { raw in
                DiskFile.read(fd: fd, into: raw.baseAddress.unsafelyUnwrapped, count: raw.count, offset: 0)
            }
            guard got == preamble.count else { return false }
            return (try? preamble.withUnsafeBytes { raw throws(DiskEntryHeader.Defect) in
                try DiskEntryHeader.layout(of: raw, fileSize: size)
            }) != nil
        }

        /// Decodes the header in `bytes`, re-reading it up to twice if its checksum fails.
        ///
        /// A mismatch can be a concurrent in-place re-date caught half written;
        /// a second read then sees the finished header. A persistent mismatch is corruption.
        private func decodeHeader(
            fd: Int32, buffer: UnsafeMutableRawPointer, bytes: UnsafeRawBufferPointer, layout: DiskEntryHeader.Layout,
            decodingMetadata: Bool = true
        ) throws(DiskEntryHeader.Defect) -> DiskEntryHeader {
            var attempt = 0
            while true {
                do {
                    return try DiskEntryHeader.decode(bytes, layout: layout, decodingMetadata: decodingMetadata)
                } catch .headerChecksumMismatch where attempt < 2 {
                    attempt += 1
                    guard DiskFile.read(fd: fd, into: buffer, count: layout.headerLength, offset: 0) == layout.headerLength else {
                        throw .headerChecksumMismatch
                    }
                }
            }
        }

        /// Updates the last-access time and, when extending, the expiration in place.
        ///
        /// Returns the header now on disk and whether the file was written.
        private func recordAccess(
            fd: Int32, header: DiskEntryHeader, metadataBytes: UnsafeRawBufferPointer,
            lastAccess: Date, now: Date, extending: ExpirationExtending
        ) -> (DiskEntryHeader, Bool) {
            var updated = header
            switch extending {
            case .none:
                break
            case .cacheTime:
                if header.lifetime > 0 { updated.expirationDate = now.addingTimeInterval(header.lifetime) }
            case .expirationTime(let expiration):
                updated.expirationDate = expiration.estimatedExpirationSince(now)
                updated.lifetime = expiration.slidingLifetime
            }
            let tolerance = config.accessUpdateInterval
            let redate = updated.lifetime != header.lifetime
                || abs(updated.expirationDate.timeIntervalSince(header.expirationDate)) > tolerance
            if redate {
                let preamble = updated.encodedPreamble(metadataBytes: metadataBytes)
                guard preamble.withUnsafeBytes({ DiskFile.write(fd: fd, $0, offset: 0) }) else { return (header, false) }
                DiskFile.setTimes(fd: fd, to: now)
                return (updated, true)
            }
            if abs(now.timeIntervalSince(lastAccess)) > tolerance {
                DiskFile.setTimes(fd: fd, to: now)
                return (header, true)
            }
            return (header, false)
        }

        private func discardCorrupt(path: String, status: DiskFile.Status) {
            DiskFile.unlinkIfSame(path, as: status)
            state.withLock { state in
                if let known = state.knownSize { state.knownSize = max(0, known - status.size) }
            }
        }

        /// Whether an unexpired, well-formed entry is stored under `key`.
        ///
        /// Reads only the header, so a payload corrupted after a valid header is
        /// found only when read. Does not change the last-access time.
        public func isCached(forKey key: String, forcedExtension: String? = nil) -> Bool {
            let path = directoryPath + "/" + cacheFileName(forKey: key, forcedExtension: forcedExtension)
            guard let (header, _) = readHeader(atPath: path) else { return false }
            return header.expirationDate > clock.now()
        }

        /// Reads and verifies only the header of the file at `path` (metadata not decoded); `nil` when missing or invalid.
        private func readHeader(atPath path: String) -> (DiskEntryHeader, DiskFile.Status)? {
            let fd = DiskFile.open(path, O_RDONLY)
            guard fd >= 0 else { return nil }
            defer { DiskFile.close(fd) }
            guard let status = DiskFile.status(fd: fd), status.isRegularFile else { return nil }
            var preamble = [UInt8](repeating: 0, count: DiskEntryHeader.preambleSize)
            let got = preamble.withUnsafeMutableBytes { raw in
                DiskFile.read(fd: fd, into: raw.baseAddress.unsafelyUnwrapped, count: raw.count, offset: 0)
            }
            guard got == preamble.count,
                  let layout = try? preamble.withUnsafeBytes({ raw throws(DiskEntryHeader.Defect) in
                      try DiskEntryHeader.layout(of: raw, fileSize: status.size)
                  }) else { return nil }
            let buffer = UnsafeMutableRawPointer.allocate(byteCount: layout.headerLength, alignment: 16)
            defer { buffer.deallocate() }
            guard DiskFile.read(fd: fd, into: buffer, count: layout.headerLength, offset: 0) == layout.headerLength else { return nil }
            let bytes = UnsafeRawBufferPointer(start: buffer, count: layout.headerLength)
            guard let header = try? decodeHeader(fd: fd, buffer: buffer, bytes: bytes, layout: layout, decodingMetadata: false) else {
                return nil
            }
            return (header, status)
        }

        // MARK: - Re-dating

        /// Gives the entry under `key` a new expiration counted from now, without rewriting its payload.
        ///
        /// For HTTP revalidation: after a `304 Not Modified`, re-date the entry
        /// (expired or not). Rewrites the 64-byte header in place and marks the
        /// entry as just used. Returns `false` when there is no valid entry.
        /// Throws `.cacheError(.cannotWriteFile)` if the header cannot be written.
        @discardableResult
        public func extendExpiration(
            forKey key: String,
            forcedExtension: String? = nil,
            to expiration: StorageExpiration? = nil
        ) throws(HalcyonError) -> Bool {
            let path = directoryPath + "/" + cacheFileName(forKey: key, forcedExtension: forcedExtension)
            let now = clock.now()
            let fd = DiskFile.open(path, O_RDWR)
            guard fd >= 0 else {
                if errno == ENOENT || errno == ENOTDIR { return false }
                throw .cacheError(reason: .cannotWriteFile(path: path, message: DiskFile.lastError()))
            }
            defer { DiskFile.close(fd) }
            guard let status = DiskFile.status(fd: fd), status.isRegularFile, status.size >= DiskEntryHeader.preambleSize else { return false }
            var preamble = [UInt8](repeating: 0, count: DiskEntryHeader.preambleSize)
            let got = preamble.withUnsafeMutableBytes { raw in
                DiskFile.read(fd: fd, into: raw.baseAddress.unsafelyUnwrapped, count: raw.count, offset: 0)
            }
            guard got == preamble.count,
                  let layout = try? preamble.withUnsafeBytes({ raw throws(DiskEntryHeader.Defect) in
                      try DiskEntryHeader.layout(of: raw, fileSize: status.size)
                  }) else {
                discardCorrupt(path: path, status: status)
                return false
            }
            let buffer = UnsafeMutableRawPointer.allocate(byteCount: layout.headerLength, alignment: 16)
            defer { buffer.deallocate() }
            let bytes = UnsafeRawBufferPointer(start: buffer, count: layout.headerLength)
            guard DiskFile.read(fd: fd, into: buffer, count: layout.headerLength, offset: 0) == layout.headerLength,
                  var header = try? decodeHeader(fd: fd, buffer: buffer, bytes: bytes, layout: layout) else {
                discardCorrupt(path: path, status: status)
                return false
            }
            let expiration = expiration ?? config.expiration
            header.expirationDate = expiration.estimatedExpirationSince(now)
            header.lifetime = expiration.slidingLifetime
            let metadataBytes = UnsafeRawBufferPointer(rebasing: bytes[DiskEntryHeader.preambleSize...])
            let newPreamble = header.encodedPreamble(metadataBytes: metadataBytes)
            guard newPreamble.withUnsafeBytes({ DiskFile.write(fd: fd, $0, offset: 0) }) else {
                throw .cacheError(reason: .cannotWriteFile(path: path, message: DiskFile.lastError()))
            }
            DiskFile.setTimes(fd: fd, to: now)
            return true
        }

        // MARK: - Removing

        /// Removes the entry under `key`; no error when there is none.
        ///
        /// Throws `.cacheError(.cannotRemoveFile)` when the file exists but cannot be deleted.
        public func remove(forKey key: String, forcedExtension: String? = nil) throws(HalcyonError) {
            let path = directoryPath + "/" + cacheFileName(forKey: key, forcedExtension: forcedExtension)
            let size = DiskFile.status(path: path)?.size ?? 0
            guard unlink(path) == 0 else {
                if errno == ENOENT || errno == ENOTDIR { return }
                throw .cacheError(reason: .cannotRemoveFile(path: path, message: DiskFile.lastError()))
            }
            state.withLock { state in
                if let known = state.knownSize { state.knownSize = max(0, known - size) }
            }
        }

        /// Removes every entry and temporary file; the directory itself stays.
        ///
        /// Throws `.cacheError(.cannotRemoveFile)` for the first file that cannot be deleted.
        public func removeAll() throws(HalcyonError) {
            for name in directoryNames() {
                let path = directoryPath + "/" + name
                if unlink(path) != 0, errno != ENOENT {
                    throw .cacheError(reason: .cannotRemoveFile(path: path, message: DiskFile.lastError()))
                }
            }
            state.withLock { $0.knownSize = 0 }
        }

        /// Removes expired and corrupt entries and temporary files abandoned by crashed writers; returns the removed entries' URLs.
        ///
        /// Reads only headers. Runs on the caller's thread.
        @discardableResult
        public func removeExpiredValues() -> [URL] {
            let now = clock.now()
            var removed: [URL] = []
            var remaining = 0
            for file in scan() {
                if let (header, status) = readHeader(atPath: file.path) {
                    if header.expirationDate <= now {
                        DiskFile.unlinkIfSame(file.path, as: status)
                        removed.append(URL(fileURLWithPath: file.path))
                    } else {
                        remaining += status.size
                    }
                } else if let status = DiskFile.status(path: file.path) {
                    DiskFile.unlinkIfSame(file.path, as: status)
                    removed.append(URL(fileURLWithPath: file.path))
                }
            }
            state.withLock { $0.knownSize = remaining }
            return removed
        }

        /// If the directory holds more than `sizeLimit` bytes, removes least-recently-used entries down to half the limit.
        ///
        /// Returns the removed entries' URLs. Does nothing when `sizeLimit` is 0
        /// (no limit). Stores call this in the background when they pass the
        /// limit; call it directly to trim now.
        @discardableResult
        public func removeSizeExceededValues() -> [URL] {
            let files = scan()
            var total = files.reduce(0) { $0 + $1.status.size }
            let limit = Int(clamping: config.sizeLimit)
            guard limit > 0, total > limit else {
                state.withLock { $0.knownSize = total }
                return []
            }
            let target = limit / 2
            var removed: [URL] = []
            for file in files.sorted(by: { $0.status.modificationDate < $1.status.modificationDate }) {
                guard total > target else { break }
                DiskFile.unlinkIfSame(file.path, as: file.status)
                total -= file.status.size
                removed.append(URL(fileURLWithPath: file.path))
            }
            state.withLock { $0.knownSize = total }
            return removed
        }

        // MARK: - Size

        /// Bytes taken by the entry files (headers included), counted by listing the directory now.
        public func totalSize() -> UInt {
            let total = scan().reduce(0) { $0 + $1.status.size }
            state.withLock { $0.knownSize = total }
            return UInt(total)
        }

        /// Counts the entries, how many are expired or unreadable, and the bytes they take.
        ///
        /// Reads only headers; changes nothing. Runs on the caller's thread.
        public func statistics() -> Statistics {
            let now = clock.now()
            var statistics = Statistics()
            for file in scan() {
                statistics.entryCount += 1
                statistics.totalSize += UInt(file.status.size)
                if let (header, _) = readHeader(atPath: file.path) {
                    if header.expirationDate <= now { statistics.expiredCount += 1 }
                } else {
                    statistics.unreadableCount += 1
                }
            }
            return statistics
        }

        /// What ``statistics()`` found.
        public struct Statistics: Sendable, Hashable, Codable {
            /// Entry files in the directory.
            public var entryCount = 0
            /// Entries whose expiration date has passed.
            public var expiredCount = 0
            /// Files whose header does not read as a valid entry (they read as misses).
            public var unreadableCount = 0
            /// Bytes the entry files take, headers included.
            public var totalSize: UInt = 0
        }

        /// Waits until a background size trim started by a store, if any, has finished.
        public func waitForPendingTrim() async {
            while let task = state.withLock({ $0.trimTask }) {
                await task.value
            }
        }

        private func noteStored(bytes: Int, replacing replaced: Int) {
            let limit = Int(clamping: config.sizeLimit)
            guard limit > 0 else { return }
            let needsTrim = state.withLock { state -> Bool in
                guard let known = state.knownSize else { return true }
                state.knownSize = known + bytes - replaced
                return known + bytes - replaced > limit
            }
            guard needsTrim else { return }
            guard config.trimsInBackground else {
                removeSizeExceededValues()
                return
            }
            state.withLock { state in
                guard state.trimTask == nil else {
                    state.trimAgain = true
                    return
                }
                state.trimTask = Task.detached(priority: .utility) { [self] in
                    while true {
                        removeSizeExceededValues()
                        let again = self.state.withLock { sizeState -> Bool in
                            if sizeState.trimAgain {
                                sizeState.trimAgain = false
                                return true
                            }
                            sizeState.trimTask = nil
                            return false
                        }
                        if !again { return }
                    }
                }
            }
        }

        // MARK: - Listing

        private struct ScannedFile {
            var path: String
            var status: DiskFile.Status
        }

        private func directoryNames() -> [String] {
            (try? FileManager.default.contentsOfDirectory(atPath: directoryPath)) ?? []
        }

        /// The entry files in the directory; deletes temporary files older than ten minutes on the way.
        private func scan() -> [ScannedFile] {
            let now = clock.now()
            var files: [ScannedFile] = []
            for name in directoryNames() {
                let path = directoryPath + "/" + name
                guard let status = DiskFile.status(path: path), status.isRegularFile else { continue }
                if name.hasPrefix(".") {
                    if name.hasSuffix(".tmp"), abs(now.timeIntervalSince(status.modificationDate)) > 600 {
                        DiskFile.unlinkIfSame(path, as: status)
                    }
                    continue
                }
                files.append(ScannedFile(path: path, status: status))
            }
            return files
        }

        // MARK: - File names

        /// The URL of the file that holds (or would hold) the entry for `key`.
        public func cacheFileURL(forKey key: String, forcedExtension: String? = nil) -> URL {
            directoryURL.appendingPathComponent(cacheFileName(forKey: key, forcedExtension: forcedExtension), isDirectory: false)
        }

        /// The URL of the file that holds (or would hold) the entry for `key`; same as ``cacheFileURL(forKey:forcedExtension:)``.
        public func fileURL(forKey key: String, forcedExtension: String? = nil) -> URL {
            cacheFileURL(forKey: key, forcedExtension: forcedExtension)
        }

        /// The file name for `key`: the SHA-256 hex of the key, or the escaped key, plus an optional extension.
        ///
        /// The extension is `forcedExtension`, else `config.pathExtension`, else
        /// (with `autoExtAfterHashedFileName`) the key's own extension when it is
        /// 1–20 ASCII letters or digits. An invalid `forcedExtension` is ignored.
        /// Without hashing, bytes other than letters, digits, `-`, `_` and a
        /// non-leading `.` are percent-escaped; a key that would make a name
        /// longer than 200 bytes, or an empty key, is hashed anyway.
        public func cacheFileName(forKey key: String, forcedExtension: String? = nil) -> String {
            var base: String
            if !config.usesHashedFileName, let escaped = Self.escapedFileName(key) {
                base = escaped
            } else {
                base = Self.sha256Hex(key)
            }
            let forced = forcedExtension.flatMap { Self.isValidExtension($0) ? $0 : nil }
            if let ext = forced ?? config.pathExtension {
                base += "." + ext
            } else if config.usesHashedFileName, config.autoExtAfterHashedFileName, let ext = Self.keyExtension(key) {
                base += "." + ext
            }
            return base
        }

        static func isValidExtension<S: StringProtocol>(_ ext: S) -> Bool {
            (1...20).contains(ext.utf8.count) && ext.utf8.allSatisfy { byte in
                (byte >= 0x30 && byte <= 0x39) || (byte >= 0x41 && byte <= 0x5A) || (byte >= 0x61 && byte <= 0x7A)
            }
        }

        /// The extension of the last path component of `key`, ignoring any query or fragment, if valid.
        static func keyExtension(_ key: String) -> String? {
            let path = key.prefix { $0 != "?" && $0 != "#" }
            let last = path.split(separator: "/", omittingEmptySubsequences: false).last ?? path[...]
            guard let dot = last.lastIndex(of: "."), dot != last.startIndex else { return nil }
            let ext = last[last.index(after: dot)...]
            return isValidExtension(ext) ? String(ext) : nil
        }

        static func escapedFileName(_ key: String) -> String? {
            guard !key.isEmpty else { return nil }
            let hex = Array("0123456789ABCDEF".utf8)
            var bytes: [UInt8] = []
            for (offset, byte) in key.utf8.enumerated() {
                let plain = (byte >= 0x30 && byte <= 0x39) || (byte >= 0x41 && byte <= 0x5A) || (byte >= 0x61 && byte <= 0x7A)
                    || byte == 0x2D || byte == 0x5F || (byte == 0x2E && offset > 0)
                if plain {
                    bytes.append(byte)
                } else {
                    bytes.append(contentsOf: [0x25, hex[Int(byte >> 4)], hex[Int(byte & 0x0F)]])
                }
                if bytes.count > 200 { return nil }
            }
            return String(decoding: bytes, as: UTF8.self)
        }

        static func sha256Hex(_ key: String) -> String {
            let digest = SHA256.hash(data: Array(key.utf8))
            let hex = Array("0123456789abcdef".utf8)
            var bytes: [UInt8] = []
            bytes.reserveCapacity(64)
            for byte in digest {
                bytes.append(hex[Int(byte >> 4)])
                bytes.append(hex[Int(byte & 0x0F)])
            }
            return String(decoding: bytes, as: UTF8.self)
        }
    }

    // MARK: - Config

    /// The settings of a ``DiskStorage/Backend``.
    public struct Config: Sendable {
        /// The name of the cache; the last component of its directory.
        public var name: String
        /// Largest total size in bytes before a trim to half; 0 means no limit. Default 0.
        public var sizeLimit: UInt
        /// Expiration of entries stored without one. Default 7 days.
        public var expiration: StorageExpiration
        /// Extension added to every file name, 1–20 ASCII letters or digits. Default none.
        public var pathExtension: String?
        /// Name files by the SHA-256 hex of the key rather than the escaped key. Default `true`.
        public var usesHashedFileName: Bool
        /// With hashed names, append the key's own extension (when 1–20 letters or digits). Default `false`.
        public var autoExtAfterHashedFileName: Bool
        /// The parent of the cache directory; `nil` means `$XDG_CACHE_HOME/halcyon`, else `~/.cache/halcyon`.
        public var directory: URL?
        /// `fsync` each entry and the directory after writing, for durability across power loss. Default `false`.
        public var syncsWrites: Bool
        /// Trim on a background task after a store passes `sizeLimit` (default), or synchronously in the store.
        public var trimsInBackground: Bool
        /// Reads update the last-access time and a sliding expiration at most this often, in seconds. Default 1.
        public var accessUpdateInterval: TimeInterval
        /// Hash the payload on every read, rather than once per unchanged file version per process. Default `false`.
        ///
        /// By default a file whose device, inode, size, change time and header
        /// are unchanged since this process last verified it is not re-hashed;
        /// see ``DiskStorage`` for the narrow case this misses.
        public var verifiesPayloadOnEveryRead: Bool

        /// Makes a config; see each property for its default.
        public init(
            name: String,
            sizeLimit: UInt = 0,
            expiration: StorageExpiration = .days(7),
            pathExtension: String? = nil,
            usesHashedFileName: Bool = true,
            autoExtAfterHashedFileName: Bool = false,
            directory: URL? = nil,
            syncsWrites: Bool = false,
            trimsInBackground: Bool = true,
            accessUpdateInterval: TimeInterval = 1,
            verifiesPayloadOnEveryRead: Bool = false
        ) {
            self.name = name
            self.sizeLimit = sizeLimit
            self.expiration = expiration
            self.pathExtension = pathExtension
            self.usesHashedFileName = usesHashedFileName
            self.autoExtAfterHashedFileName = autoExtAfterHashedFileName
            self.directory = directory
            self.syncsWrites = syncsWrites
            self.trimsInBackground = trimsInBackground
            self.accessUpdateInterval = accessUpdateInterval
            self.verifiesPayloadOnEveryRead = verifiesPayloadOnEveryRead
        }

        /// `$XDG_CACHE_HOME/halcyon` when that variable is an absolute path, else `~/.cache/halcyon`.
        public static func defaultParentDirectory() -> URL {
            let environment = ProcessInfo.processInfo.environment
            if let xdg = environment["XDG_CACHE_HOME"], xdg.hasPrefix("/") {
                return URL(fileURLWithPath: xdg, isDirectory: true).appendingPathComponent("halcyon", isDirectory: true)
            }
            let home = environment["HOME"].flatMap { $0.isEmpty ? nil : $0 } ?? NSHomeDirectory()
            return URL(fileURLWithPath: home, isDirectory: true)
                .appendingPathComponent(".cache", isDirectory: true)
                .appendingPathComponent("halcyon", isDirectory: true)
        }
    }

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

extension StorageExpiration {
    /// Seconds a `.cacheTime` read extends by: the relative lifetime, or 0 for fixed dates, never and expired.
    var slidingLifetime: TimeInterval {
        switch self {
        case .seconds(let seconds): return max(0, seconds)
        case .days(let days): return max(0, TimeInterval(days) * 86_400)
        case .never, .date, .expired: return 0
        }
    }
}

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
        /// The settings, changeable on a running storage (Kingfisher's live `diskStorage.config`):
        /// size limit, expiration, extensions and the other flags apply from the next call.
        ///
        /// `name`, `directory` and `cachePathBlock` are fixed when the storage is made, and an
        /// invalid `pathExtension` is not taken: a change to them is ignored.
        public var config: Config {
            get { liveConfig.withLock { $0 } }
            set {
                liveConfig.withLock { current in
                    var accepted = newValue
                    (accepted.name, accepted.directory, accepted.cachePathBlock) = (current.name, current.directory, current.cachePathBlock)
                    if let ext = accepted.pathExtension, !Self.isValidExtension(ext) { accepted.pathExtension = current.pathExtension }
                    current = accepted
                }
            }
        }
        private let liveConfig: Locked<Config>
        /// The directory holding the entry files.
        public let directoryURL: URL

        // `directoryPath`, `clock`, `state`, `verifiedPayloads` and `SizeState` are internal rather than
        // private because the extensions in DiskStorage+Reading.swift and DiskStorage+Trimming.swift use them.
        let directoryPath: String
        let clock: CacheClock
        private let syncedWrites = Atomic<Int>(0)

        /// How many entries this storage has fsynced since it was made (for tests and metrics).
        public var syncedWriteCount: Int { syncedWrites.load(ordering: .relaxed) }
        let state = Locked(SizeState())
        let verifiedPayloads = VerifiedPayloads()
        /// Test hook: called with the file name each time an entry file is opened for reading (value, entry, isCached/readHeader).
        let entryWillOpen = Locked<(@Sendable (String) -> Void)?>(nil)

        /// Size bookkeeping and the background trim, guarded by `state`.
        struct SizeState {
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
            self.liveConfig = Locked(config)
            self.clock = clock
            let parent = config.directory ?? Config.defaultParentDirectory()
            self.directoryURL = config.cachePathBlock?(parent, config.name) ?? parent.appendingPathComponent(config.name, isDirectory: true)
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
        /// `extensionKey` is as in ``cacheFileName(forKey:forcedExtension:extensionKey:)``.
        public func store(
            value: Data,
            forKey key: String,
            expiration: StorageExpiration? = nil,
            metadata: CacheEntryMetadata? = nil,
            forcedExtension: String? = nil,
            extensionKey: String? = nil,
            syncsWrites: Bool? = nil
        ) throws(HalcyonError) {
            let now = clock.now()
            let expiration = expiration ?? config.expiration
            let expiresAt = expiration.estimatedExpirationSince(now)
            guard expiresAt > now else {
                try remove(forKey: key, forcedExtension: forcedExtension, extensionKey: extensionKey)
                return
            }
            var metadata = metadata ?? CacheEntryMetadata()
            if metadata.originalKey == nil { metadata.originalKey = key }
            let payloadHash = value.withUnsafeBytes { EntryChecksum.hash($0) }
            let header = DiskEntryHeader(
                metadata: metadata, payloadLength: value.count, storedDate: now,
                expirationDate: expiresAt, payloadHash: payloadHash, lifetime: expiration.slidingLifetime)
            let fileName = cacheFileName(forKey: key, forcedExtension: forcedExtension, extensionKey: extensionKey)
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
                let footprint = written ? DiskFile.status(fd: fd).map(DiskFile.footprint) ?? header.count + payload.count : 0
                DiskFile.close(fd)
                guard written else {
                    _ = unlink(tempPath)
                    throw .cacheError(reason: .cannotWriteFile(path: finalPath, message: writeError))
                }
                let replaced = DiskFile.status(path: finalPath).map(DiskFile.footprint) ?? 0
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
                return (footprint, replaced)
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

import Foundation
#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

extension DiskStorage.Backend {
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
        extensionKey: String? = nil,
        to expiration: StorageExpiration? = nil
    ) throws(HalcyonError) -> Bool {
        let path = directoryPath + "/" + cacheFileName(forKey: key, forcedExtension: forcedExtension, extensionKey: extensionKey)
        let now = clock.now()
        let fd = DiskFile.open(path, O_RDWR)
        guard fd >= 0 else {
            if errno == ENOENT || errno == ENOTDIR { return false }
            throw .cacheError(reason: .cannotWriteFile(path: path, message: DiskFile.lastError()))
        }
        defer { DiskFile.close(fd) }
        guard let status = DiskFile.status(fd: fd), status.isRegularFile, status.size >= DiskEntryHeader.preambleSize else { return false }
        guard let layout = readLayout(fd: fd, fileSize: status.size) else {
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
    public func remove(forKey key: String, forcedExtension: String? = nil, extensionKey: String? = nil) throws(HalcyonError) {
        let path = directoryPath + "/" + cacheFileName(forKey: key, forcedExtension: forcedExtension, extensionKey: extensionKey)
        let size = DiskFile.status(path: path).map(DiskFile.footprint) ?? 0
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
                    remaining += DiskFile.footprint(status)
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
        var total = files.reduce(0) { $0 + DiskFile.footprint($1.status) }
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
            total -= DiskFile.footprint(file.status)
            removed.append(URL(fileURLWithPath: file.path))
        }
        state.withLock { $0.knownSize = total }
        return removed
    }

    // MARK: - Size

    /// Disk space taken by the entry files (allocated blocks, at least each file's length), counted by listing the directory now.
    public func totalSize() -> UInt {
        let total = scan().reduce(0) { $0 + DiskFile.footprint($1.status) }
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
            statistics.totalSize += UInt(DiskFile.footprint(file.status))
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
        /// Disk space the entry files take: allocated blocks, at least each file's length.
        public var totalSize: UInt = 0
    }

    /// Waits until a background size trim started by a store, if any, has finished.
    public func waitForPendingTrim() async {
        while let task = state.withLock({ $0.trimTask }) {
            await task.value
        }
    }

    func noteStored(bytes: Int, replacing replaced: Int) {
        let limit = Int(clamping: config.sizeLimit)
        guard limit > 0 else { return }
        let needsTrim = state.withLock { state -> Bool in
            guard let known = state.knownSize else { return true }
            // Never below zero: a replaced file's blocks may be counted later than its own store counted them.
            let size = max(0, known + bytes - replaced)
            state.knownSize = size
            return size > limit
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
}

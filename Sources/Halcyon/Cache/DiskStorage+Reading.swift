import Foundation
#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

extension DiskStorage.Backend {
    // MARK: - Reading

    /// The payload stored under `key`, or `nil` when there is none, it expired, or it is corrupt.
    ///
    /// Validates the header, the size and the payload checksum; a corrupt
    /// file is deleted. `extendingExpiration` (default `.cacheTime`) slides
    /// the expiration forward in place; the last-access time is updated too,
    /// both at most once per `config.accessUpdateInterval`. Throws
    /// `.cacheError(.cannotReadFile)` only for I/O failures other than a
    /// missing file. `extensionKey` is as in ``cacheFileName(forKey:forcedExtension:extensionKey:)``.
    public func value(
        forKey key: String,
        forcedExtension: String? = nil,
        extensionKey: String? = nil,
        extendingExpiration: ExpirationExtending = .cacheTime
    ) throws(HalcyonError) -> Data? {
        let path = directoryPath + "/" + cacheFileName(forKey: key, forcedExtension: forcedExtension, extensionKey: extensionKey)
        return try readEntry(atPath: path, includingExpired: false, extending: extendingExpiration, decodingMetadata: false)?.data
    }

    /// The entry stored under `key` with its metadata and dates, or `nil` when there is none or it is corrupt.
    ///
    /// With `includingExpired`, an expired entry is returned too (its
    /// ETag and Last-Modified are what a revalidation request needs), and
    /// is not extended. Otherwise behaves as ``value(forKey:forcedExtension:extensionKey:extendingExpiration:)``.
    public func entry(
        forKey key: String,
        forcedExtension: String? = nil,
        extensionKey: String? = nil,
        includingExpired: Bool = false,
        extendingExpiration: ExpirationExtending = .cacheTime
    ) throws(HalcyonError) -> DiskStorage.Entry? {
        let path = directoryPath + "/" + cacheFileName(forKey: key, forcedExtension: forcedExtension, extensionKey: extensionKey)
        guard let read = try readEntry(atPath: path, includingExpired: includingExpired, extending: extendingExpiration,
                                       decodingMetadata: true) else { return nil }
        return DiskStorage.Entry(data: read.data, metadata: read.header.metadata, storedDate: read.header.storedDate,
                     expirationDate: read.header.expirationDate, lastAccessDate: read.lastAccessDate,
                     fileURL: URL(fileURLWithPath: path))
    }

    /// The bytes, metadata and expiration of the entry under `key`, without the file URL and dates of ``entry(forKey:forcedExtension:extensionKey:includingExpired:extendingExpiration:)``.
    ///
    /// The retrieve pipeline's one read per attempt; same rules as `entry`.
    func lookupEntry(
        forKey key: String, forcedExtension: String?, extensionKey: String?, includingExpired: Bool,
        extendingExpiration: ExpirationExtending
    ) throws(HalcyonError) -> (data: Data, metadata: CacheEntryMetadata, expirationDate: Date)? {
        let path = directoryPath + "/" + cacheFileName(forKey: key, forcedExtension: forcedExtension, extensionKey: extensionKey)
        guard let read = try readEntry(atPath: path, includingExpired: includingExpired, extending: extendingExpiration,
                                       decodingMetadata: includingExpired) else { return nil }
        return (read.data, read.header.metadata, read.header.expirationDate)
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
        guard let (fd, writable) = try openEntryFile(atPath: path) else { return nil }
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
        guard let (verified, layout) = verifiedHeader(fd: fd, buffer: buffer, bytes: bytes, path: path, status: status,
                                                      decodingMetadata: decodingMetadata) else { return nil }
        var header = verified
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

    /// Opens the entry file at `path` read-write, or read-only when the file or file system refuses writing.
    ///
    /// Returns `nil` when there is no such file (or it is a directory); throws
    /// `.cacheError(.cannotReadFile)` for any other failure.
    private func openEntryFile(atPath path: String) throws(HalcyonError) -> (fd: Int32, writable: Bool)? {
        var writable = true
        willOpenEntry(atPath: path)
        var fd = DiskFile.open(path, O_RDWR)
        if fd < 0, errno == EACCES || errno == EROFS || errno == EPERM {
            writable = false
            willOpenEntry(atPath: path)
            fd = DiskFile.open(path, O_RDONLY)
        }
        guard fd >= 0 else {
            if errno == ENOENT || errno == ENOTDIR || errno == EISDIR { return nil }
            throw .cacheError(reason: .cannotReadFile(path: path, message: DiskFile.lastError()))
        }
        return (fd, writable)
    }

    /// Calls the `entryWillOpen` test hook, if one is set, with the file name of `path`.
    private func willOpenEntry(atPath path: String) {
        guard let hook = entryWillOpen.withLock({ $0 }) else { return }
        hook(path.lastIndex(of: "/").map { String(path[path.index(after: $0)...]) } ?? path)
    }

    /// Decodes the header of the whole entry file in `bytes` and checks the payload against its hash.
    ///
    /// The hash is skipped when this file version was already verified (see
    /// `VerifiedPayloads`), unless `config.verifiesPayloadOnEveryRead`. A
    /// corrupt file is deleted and gives `nil`.
    private func verifiedHeader(
        fd: Int32, buffer: UnsafeMutableRawPointer, bytes: UnsafeRawBufferPointer, path: String, status: DiskFile.Status,
        decodingMetadata: Bool
    ) -> (DiskEntryHeader, DiskEntryHeader.Layout)? {
        let layout: DiskEntryHeader.Layout
        let header: DiskEntryHeader
        do {
            layout = try DiskEntryHeader.layout(of: bytes, fileSize: status.size)
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
        return (header, layout)
    }

    /// Files up to this size are read in one call; larger ones have their preamble checked before allocating.
    static let singleReadLimit = 8 << 20

    /// Whether the preamble of a large file announces exactly its size, so reading it whole is worth the memory.
    private func hasPlausibleLayout(fd: Int32, size: Int) -> Bool {
        readLayout(fd: fd, fileSize: size) != nil
    }

    /// Reads the 64-byte preamble of the open file `fd` and the lengths it announces,
    /// checked against `fileSize`; nil when it is short or invalid.
    func readLayout(fd: Int32, fileSize: Int) -> DiskEntryHeader.Layout? {
        var preamble = [UInt8](repeating: 0, count: DiskEntryHeader.preambleSize)
        let got = preamble.withUnsafeMutableBytes { raw in
            DiskFile.read(fd: fd, into: raw.baseAddress.unsafelyUnwrapped, count: raw.count, offset: 0)
        }
        guard got == preamble.count else { return nil }
        return try? preamble.withUnsafeBytes { raw throws(DiskEntryHeader.Defect) in
            try DiskEntryHeader.layout(of: raw, fileSize: fileSize)
        }
    }

    /// Decodes the header in `bytes`, re-reading it up to twice if its checksum fails.
    ///
    /// A mismatch can be a concurrent in-place re-date caught half written;
    /// a second read then sees the finished header. A persistent mismatch is corruption.
    func decodeHeader(
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

    func discardCorrupt(path: String, status: DiskFile.Status) {
        DiskFile.unlinkIfSame(path, as: status)
        state.withLock { state in
            if let known = state.knownSize { state.knownSize = max(0, known - DiskFile.footprint(status)) }
        }
    }

    /// Whether an unexpired, well-formed entry is stored under `key`.
    ///
    /// Reads only the header, so a payload corrupted after a valid header is
    /// found only when read. Does not change the last-access time.
    public func isCached(forKey key: String, forcedExtension: String? = nil, extensionKey: String? = nil) -> Bool {
        let path = directoryPath + "/" + cacheFileName(forKey: key, forcedExtension: forcedExtension, extensionKey: extensionKey)
        guard let (header, _) = readHeader(atPath: path) else { return false }
        return header.expirationDate > clock.now()
    }

    /// Reads and verifies only the header of the file at `path` (metadata not decoded); `nil` when missing or invalid.
    func readHeader(atPath path: String) -> (DiskEntryHeader, DiskFile.Status)? {
        willOpenEntry(atPath: path)
        let fd = DiskFile.open(path, O_RDONLY)
        guard fd >= 0 else { return nil }
        defer { DiskFile.close(fd) }
        guard let status = DiskFile.status(fd: fd), status.isRegularFile else { return nil }
        guard let layout = readLayout(fd: fd, fileSize: status.size) else { return nil }
        let buffer = UnsafeMutableRawPointer.allocate(byteCount: layout.headerLength, alignment: 16)
        defer { buffer.deallocate() }
        guard DiskFile.read(fd: fd, into: buffer, count: layout.headerLength, offset: 0) == layout.headerLength else { return nil }
        let bytes = UnsafeRawBufferPointer(start: buffer, count: layout.headerLength)
        guard let header = try? decodeHeader(fd: fd, buffer: buffer, bytes: bytes, layout: layout, decodingMetadata: false) else {
            return nil
        }
        return (header, status)
    }
}

import Foundation
import Testing
@testable import Halcyon
#if canImport(Glibc)
import Glibc
#endif

@Suite("DiskStorage")
struct DiskStorageTests {
    private func makeStorage(
        in directory: TemporaryDirectory, name: String = "cache", clock: TestClock = TestClock(),
        sizeLimit: UInt = 0, expiration: StorageExpiration = .days(7), trimsInBackground: Bool = true
    ) throws -> DiskStorage.Backend {
        let config = DiskStorage.Config(name: name, sizeLimit: sizeLimit, expiration: expiration,
                                        directory: directory.url, trimsInBackground: trimsInBackground)
        return try DiskStorage.Backend(config: config, clock: clock.cacheClock)
    }

    private func bytes(_ count: Int, seed: UInt8 = 1) -> Data {
        Data((0..<count).map { UInt8(truncatingIfNeeded: $0 &* 31 &+ Int(seed)) })
    }

    private func entryFiles(_ storage: DiskStorage.Backend) -> [String] {
        ((try? FileManager.default.contentsOfDirectory(atPath: storage.directoryURL.path)) ?? []).filter { !$0.hasPrefix(".") }
    }

    /// The length of the entry file `name` and the disk space allocated for it, from `lstat`.
    private func onDisk(_ storage: DiskStorage.Backend, _ name: String) -> (length: Int, allocated: Int) {
        var raw = stat()
        guard lstat(storage.directoryURL.path + "/" + name, &raw) == 0 else { return (0, 0) }
        return (Int(raw.st_size), Int(raw.st_blocks) * 512)
    }

    /// What one entry of `count` bytes under a two-character key counts for here (file systems differ).
    private func entryFootprint(_ count: Int) throws -> Int {
        let directory = TemporaryDirectory()
        defer { directory.remove() }
        let storage = try makeStorage(in: directory, name: "probe")
        try storage.store(value: bytes(count), forKey: "kp")
        return Int(storage.totalSize())
    }

    /// Whether the temporary directory's file system allocates whole blocks for a small file (ext4, tmpfs, xfs).
    static let allocatesWholeBlocks: Bool = {
        let path = FileManager.default.temporaryDirectory.appendingPathComponent("halcyon-blocks-\(UUID().uuidString)").path
        guard FileManager.default.createFile(atPath: path, contents: Data(count: 100)) else { return false }
        defer { unlink(path) }
        var raw = stat()
        return lstat(path, &raw) == 0 && Int(raw.st_blocks) * 512 > 100
    }()

    // MARK: - Basics

    @Test("stores and reads back bytes, metadata and dates")
    func roundTrip() throws {
        let directory = TemporaryDirectory()
        defer { directory.remove() }
        let clock = TestClock()
        let storage = try makeStorage(in: directory, clock: clock)
        let payload = bytes(100_000)
        let metadata = CacheEntryMetadata(contentType: "image/png", etag: "\"abc\"", lastModified: "Tue, 15 Nov 1994 12:45:26 GMT",
                                          cacheControl: "max-age=60")
        try storage.store(value: payload, forKey: "https://example.com/a.png", expiration: .seconds(60), metadata: metadata)
        #expect(try storage.value(forKey: "https://example.com/a.png") == payload)
        let entry = try #require(try storage.entry(forKey: "https://example.com/a.png"))
        #expect(entry.data == payload)
        #expect(entry.metadata.originalKey == "https://example.com/a.png")
        #expect(entry.metadata.etag == "\"abc\"")
        #expect(entry.metadata.contentType == "image/png")
        #expect(entry.metadata.lastModified == "Tue, 15 Nov 1994 12:45:26 GMT")
        #expect(entry.metadata.cacheControl == "max-age=60")
        #expect(entry.storedDate == clock.now)
        #expect(entry.expirationDate == clock.now.addingTimeInterval(60))
        #expect(try storage.value(forKey: "missing") == nil)
        try storage.store(value: Data(), forKey: "empty")
        #expect(try storage.value(forKey: "empty") == Data())
    }

    @Test("remove, removeAll and totalSize")
    func removeAndSize() throws {
        let directory = TemporaryDirectory()
        defer { directory.remove() }
        let storage = try makeStorage(in: directory)
        #expect(storage.totalSize() == 0)
        try storage.store(value: bytes(1_000), forKey: "a")
        try storage.store(value: bytes(2_000), forKey: "b")
        let size = storage.totalSize()
        let files = entryFiles(storage).map { onDisk(storage, $0) }
        #expect(files.reduce(0) { $0 + $1.length } > 3_000 && files.reduce(0) { $0 + $1.length } < 3_400, "payloads plus small headers")
        #expect(size == UInt(files.reduce(0) { $0 + max($1.length, $1.allocated) }), "what the files take on disk")
        try storage.remove(forKey: "a")
        try storage.remove(forKey: "a")
        #expect(storage.isCached(forKey: "a") == false)
        #expect(storage.isCached(forKey: "b"))
        try storage.removeAll()
        #expect(storage.totalSize() == 0)
        #expect(try storage.value(forKey: "b") == nil)
    }

    // MARK: - File names

    @Test("file names are the SHA-256 hex of the key, with optional extensions")
    func fileNames() throws {
        let directory = TemporaryDirectory()
        defer { directory.remove() }
        let storage = try makeStorage(in: directory)
        #expect(storage.cacheFileName(forKey: "abc") == "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad")
        #expect(storage.fileURL(forKey: "abc").deletingLastPathComponent().path == storage.directoryURL.path)
        #expect(storage.cacheFileName(forKey: "abc", forcedExtension: "webp").hasSuffix(".webp"))
        #expect(storage.cacheFileName(forKey: "abc", forcedExtension: "../x").count == 64, "an invalid forced extension is ignored")

        let withExt = try DiskStorage.Backend(config: DiskStorage.Config(name: "e", pathExtension: "img", directory: directory.url))
        #expect(withExt.cacheFileName(forKey: "abc").hasSuffix(".img"))

        let auto = try DiskStorage.Backend(config: DiskStorage.Config(name: "auto", autoExtAfterHashedFileName: true, directory: directory.url))
        #expect(auto.cacheFileName(forKey: "https://x.org/p/photo.JPG").hasSuffix(".JPG"))
        #expect(auto.cacheFileName(forKey: "https://x.org/p/photo.JPG?size=2#top").count == 64, "a query leaves no extension")
        #expect(auto.cacheFileName(forKey: "https://x.org/p/photo").count == 64)
        #expect(auto.cacheFileName(forKey: "https://x.org/p/a.abcdefghijklmnopqrstu").count == 64, "21 characters is too long")
        #expect(auto.cacheFileName(forKey: "https://x.org/p/a.abcdefghijklmnopqrst").hasSuffix(".abcdefghijklmnopqrst"))
        #expect(auto.cacheFileName(forKey: "https://x.org/p/a.p-g").count == 64)
        #expect(auto.cacheFileName(forKey: "https://x.org/.hidden").hasSuffix(".hidden"), "Kingfisher's rule: after the last dot")

        let plain = try DiskStorage.Backend(config: DiskStorage.Config(name: "plain", usesHashedFileName: false, directory: directory.url))
        #expect(plain.cacheFileName(forKey: "simple-key_1.png") == "simple-key_1.png")
        #expect(plain.cacheFileName(forKey: "../etc/passwd") == "%2E.%2Fetc%2Fpasswd")
        #expect(plain.cacheFileName(forKey: "").count == 64)
        #expect(plain.cacheFileName(forKey: String(repeating: "/", count: 100)).count == 64)
        try plain.store(value: bytes(10), forKey: "../escape")
        #expect(try plain.value(forKey: "../escape") == bytes(10))
        #expect(FileManager.default.fileExists(atPath: directory.url.appendingPathComponent("escape").path) == false)
    }

    @Test("invalid configurations are refused with a typed error")
    func invalidConfig() {
        let directory = TemporaryDirectory()
        defer { directory.remove() }
        for config in [
            DiskStorage.Config(name: "", directory: directory.url),
            DiskStorage.Config(name: "a/b", directory: directory.url),
            DiskStorage.Config(name: "..", directory: directory.url),
            DiskStorage.Config(name: "ok", pathExtension: "p/g", directory: directory.url),
            DiskStorage.Config(name: "ok", pathExtension: "", directory: directory.url),
        ] {
            #expect {
                _ = try DiskStorage.Backend(config: config)
            } throws: { error in
                guard case HalcyonError.cacheError(reason: .invalidConfiguration) = error else { return false }
                return true
            }
        }
    }

    @Test("the default directory follows XDG_CACHE_HOME or ~/.cache")
    func defaultDirectory() throws {
        let parent = DiskStorage.Config.defaultParentDirectory()
        #expect(parent.lastPathComponent == "halcyon")
        #expect(parent.path.hasPrefix("/"))
        if let xdg = ProcessInfo.processInfo.environment["XDG_CACHE_HOME"], xdg.hasPrefix("/") {
            #expect(parent.deletingLastPathComponent().path == URL(fileURLWithPath: xdg).path)
        } else {
            #expect(parent.deletingLastPathComponent().lastPathComponent == ".cache")
        }
        let storage = try DiskStorage.Backend(config: DiskStorage.Config(name: "named"))
        #expect(storage.directoryURL.lastPathComponent == "named")
        #expect(storage.directoryURL.deletingLastPathComponent().path == parent.path)
    }

    // MARK: - Expiration

    @Test("entries expire by the injected clock; removeExpiredValues deletes only expired ones")
    func expiration() throws {
        let directory = TemporaryDirectory()
        defer { directory.remove() }
        let clock = TestClock()
        let storage = try makeStorage(in: directory, clock: clock, expiration: .seconds(100))
        try storage.store(value: bytes(10), forKey: "default")
        try storage.store(value: bytes(10), forKey: "short", expiration: .seconds(10))
        try storage.store(value: bytes(10), forKey: "days", expiration: .days(2))
        try storage.store(value: bytes(10), forKey: "never", expiration: .never)
        try storage.store(value: bytes(10), forKey: "expired", expiration: .expired)
        #expect(storage.isCached(forKey: "expired") == false)
        #expect(entryFiles(storage).count == 4)
        clock.advance(by: 11)
        #expect(storage.isCached(forKey: "short") == false)
        #expect(try storage.value(forKey: "short") == nil)
        #expect(try storage.entry(forKey: "short", includingExpired: true)?.data == bytes(10))
        #expect(storage.isCached(forKey: "default"))
        clock.advance(by: 100)
        let removed = storage.removeExpiredValues()
        #expect(removed.count == 2)
        #expect(entryFiles(storage).count == 2)
        clock.advance(by: 2 * 86_400)
        #expect(try storage.value(forKey: "days") == nil)
        #expect(try storage.value(forKey: "never") == bytes(10))
    }

    @Test("reads slide a relative expiration forward in the header; fixed dates do not slide")
    func slidingExpiration() throws {
        let directory = TemporaryDirectory()
        defer { directory.remove() }
        let clock = TestClock()
        let storage = try makeStorage(in: directory, clock: clock)
        let fixedDate = clock.now.addingTimeInterval(100)
        try storage.store(value: bytes(10), forKey: "slide", expiration: .seconds(100))
        try storage.store(value: bytes(10), forKey: "plain", expiration: .seconds(100))
        try storage.store(value: bytes(10), forKey: "date", expiration: .date(fixedDate))
        clock.advance(by: 90)
        #expect(try storage.value(forKey: "slide", extendingExpiration: .cacheTime) != nil)
        #expect(try storage.value(forKey: "plain", extendingExpiration: .none) != nil)
        #expect(try storage.value(forKey: "date", extendingExpiration: .cacheTime) != nil)
        clock.advance(by: 60)
        #expect(try storage.value(forKey: "plain") == nil)
        #expect(try storage.value(forKey: "date") == nil)
        let entry = try #require(try storage.entry(forKey: "slide", extendingExpiration: .none))
        #expect(entry.expirationDate == clock.now.addingTimeInterval(-60 + 100))
        #expect(try storage.value(forKey: "slide", extendingExpiration: .expirationTime(.seconds(1_000))) != nil)
        clock.advance(by: 900)
        #expect(try storage.value(forKey: "slide", extendingExpiration: .none) != nil)
    }

    @Test("extendExpiration re-dates an expired entry in place, keeping payload and metadata")
    func redate() throws {
        let directory = TemporaryDirectory()
        defer { directory.remove() }
        let clock = TestClock()
        let storage = try makeStorage(in: directory, clock: clock)
        let payload = bytes(5_000)
        try storage.store(value: payload, forKey: "k", expiration: .seconds(10), metadata: CacheEntryMetadata(etag: "W/\"1\""))
        let inode = DiskFile.status(path: storage.fileURL(forKey: "k").path)?.inode
        clock.advance(by: 20)
        #expect(try storage.value(forKey: "k") == nil)
        let stale = try #require(try storage.entry(forKey: "k", includingExpired: true))
        #expect(stale.metadata.etag == "W/\"1\"")
        #expect(try storage.extendExpiration(forKey: "k", to: .seconds(3_600)))
        #expect(DiskFile.status(path: storage.fileURL(forKey: "k").path)?.inode == inode, "the file is not rewritten")
        let fresh = try #require(try storage.entry(forKey: "k", extendingExpiration: .none))
        #expect(fresh.data == payload)
        #expect(fresh.metadata.etag == "W/\"1\"")
        #expect(fresh.expirationDate == clock.now.addingTimeInterval(3_600))
        #expect(fresh.storedDate == clock.now.addingTimeInterval(-20))
        #expect(try storage.extendExpiration(forKey: "missing") == false)
    }

    @Test("the modification time records the last access, not creation")
    func lastAccess() throws {
        let directory = TemporaryDirectory()
        defer { directory.remove() }
        let clock = TestClock()
        let storage = try makeStorage(in: directory, clock: clock)
        try storage.store(value: bytes(10), forKey: "k", expiration: .never)
        let path = storage.fileURL(forKey: "k").path
        #expect(DiskFile.status(path: path)?.modificationDate == clock.now)
        clock.advance(by: 3_600)
        _ = try storage.value(forKey: "k")
        #expect(DiskFile.status(path: path)?.modificationDate == clock.now)
        let entry = try #require(try storage.entry(forKey: "k"))
        #expect(entry.lastAccessDate == clock.now)
        _ = storage.isCached(forKey: "k")
    }

    // MARK: - Size limit

    @Test("a store past the size limit trims least-recently-used entries to half the limit")
    func sizeLimitTrim() async throws {
        let directory = TemporaryDirectory()
        defer { directory.remove() }
        let clock = TestClock()
        let storage = try makeStorage(in: directory, clock: clock)
        // The limit is set from what one entry takes on this file system: nine fit, ten do not.
        let entry = try entryFootprint(2_000)
        let limit = 10 * entry - entry / 2
        storage.config.sizeLimit = UInt(limit)
        for index in 0..<9 {
            try storage.store(value: bytes(2_000), forKey: "k\(index)")
            clock.advance(by: 10)
        }
        #expect(storage.totalSize() == UInt(9 * entry))
        _ = try storage.value(forKey: "k0")
        clock.advance(by: 10)
        _ = try storage.value(forKey: "k1")
        clock.advance(by: 10)
        try storage.store(value: bytes(2_000), forKey: "k9")
        await storage.waitForPendingTrim()
        let size = Int(storage.totalSize())
        #expect(size <= limit / 2)
        #expect(size > limit / 4)
        let kept = Set((0...9).filter { storage.isCached(forKey: "k\($0)") })
        #expect(kept == [0, 1, 8, 9], "the least recently used go first")
    }

    @Test("the trim can run synchronously, and sizeLimit 0 means no limit")
    func synchronousTrimAndNoLimit() throws {
        let directory = TemporaryDirectory()
        defer { directory.remove() }
        let clock = TestClock()
        let limit = 10 * (try entryFootprint(1_000))
        let limited = try makeStorage(in: directory, name: "limited", clock: clock, sizeLimit: UInt(limit), trimsInBackground: false)
        let unlimited = try makeStorage(in: directory, name: "unlimited", clock: clock)
        for index in 0..<30 {
            try limited.store(value: bytes(1_000), forKey: "k\(index)")
            try unlimited.store(value: bytes(1_000), forKey: "k\(index)")
            clock.advance(by: 1)
            #expect(limited.totalSize() <= UInt(limit))
        }
        #expect(unlimited.totalSize() > 30_000)
        #expect(unlimited.removeSizeExceededValues().isEmpty)
        #expect(limited.isCached(forKey: "k29"))
        #expect(limited.isCached(forKey: "k0") == false)
    }

    @Test("the size limit counts the disk space entry files take: many small entries stay inside it",
          .enabled(if: DiskStorageTests.allocatesWholeBlocks, "the file system does not allocate whole blocks for small files"))
    func limitCountsAllocatedSpace() throws {
        let directory = TemporaryDirectory()
        defer { directory.remove() }
        // Sixteen entries' worth of disk: 64 KiB on ext4, where one 100-byte entry takes a 4 KiB block.
        let limit = 16 * (try entryFootprint(100))
        let storage = try makeStorage(in: directory, sizeLimit: UInt(limit), trimsInBackground: false)
        for index in 0..<200 {
            try storage.store(value: bytes(100, seed: UInt8(index % 256)), forKey: "k\(index)")
        }
        let files = entryFiles(storage)
        let used = files.reduce(0) { $0 + onDisk(storage, $1).allocated }
        let lengths = files.reduce(0) { $0 + onDisk(storage, $1).length }
        #expect(used <= limit, "\(files.count) entries of \(lengths) bytes take \(used) bytes of disk")
        #expect(storage.totalSize() == UInt(used))
        #expect(storage.isCached(forKey: "k199"))
    }

    // MARK: - Damage

    @Test("corrupt, truncated, extended and foreign files read as misses and are removed")
    func corruptEntries() throws {
        let directory = TemporaryDirectory()
        defer { directory.remove() }
        let storage = try makeStorage(in: directory)
        let payload = bytes(20_000)
        let damages: [(String, (inout Data) -> Void)] = [
            ("payload bit flip", { $0[$0.count - 100] ^= 0x01 }),
            ("metadata bit flip", { $0[70] ^= 0x20 }),
            ("expiration rewritten", { $0[33] ^= 0x10 }),
            ("truncated", { $0 = $0.prefix($0.count - 1) }),
            ("truncated into header", { $0 = $0.prefix(40) }),
            ("extended", { $0.append(0) }),
            ("empty", { $0 = Data() }),
            ("bad magic", { $0[0] = 0x00 }),
            ("foreign file", { $0 = Data("<html>not an entry</html>".utf8) + Data(count: 100) }),
            ("large foreign file", { $0 = Data(count: 9 << 20) }),
            ("large file claiming another size", { $0.append(Data(count: 9 << 20)) }),
        ]
        for (name, damage) in damages {
            let key = "key-\(name)"
            try storage.store(value: payload, forKey: key, metadata: CacheEntryMetadata(etag: "e"))
            let url = storage.fileURL(forKey: key)
            var contents = try Data(contentsOf: url)
            damage(&contents)
            try contents.write(to: url)
            #expect(storage.isCached(forKey: key) == false || name.contains("payload"), "\(name)")
            #expect(try storage.value(forKey: key) == nil, "\(name)")
            #expect(FileManager.default.fileExists(atPath: url.path) == false, "\(name) file should be removed")
        }
        try storage.store(value: payload, forKey: "good")
        let scrap = storage.fileURL(forKey: "scrap")
        try Data(repeating: 7, count: 300).write(to: scrap)
        #expect(storage.removeExpiredValues().count == 1)
        #expect(try storage.value(forKey: "good") == payload)
    }

    @Test("a payload damaged in place after a verified read is still detected")
    func damageAfterVerifiedRead() async throws {
        let directory = TemporaryDirectory()
        defer { directory.remove() }
        let lazy = try makeStorage(in: directory, name: "lazy")
        let strict = try DiskStorage.Backend(config: DiskStorage.Config(name: "strict", directory: directory.url,
                                                                         verifiesPayloadOnEveryRead: true))
        let payload = bytes(50_000)
        for storage in [lazy, strict] {
            try storage.store(value: payload, forKey: "k")
            #expect(try storage.value(forKey: "k") == payload)
            #expect(try storage.value(forKey: "k") == payload)
            if storage === lazy {
                // Let the inode change time move past the tick of the last write.
                try await Task.sleep(nanoseconds: 30_000_000)
            }
            let handle = try FileHandle(forWritingTo: storage.fileURL(forKey: "k"))
            try handle.seek(toOffset: 30_000)
            try handle.write(contentsOf: Data([0xAA, 0xBB]))
            try handle.close()
            #expect(try storage.value(forKey: "k") == nil)
            #expect(FileManager.default.fileExists(atPath: storage.fileURL(forKey: "k").path) == false)
        }
    }

    @Test("a directory deleted while the cache runs is recreated by the next store")
    func directoryDeleted() throws {
        let directory = TemporaryDirectory()
        defer { directory.remove() }
        let storage = try makeStorage(in: directory)
        try storage.store(value: bytes(100), forKey: "a")
        try FileManager.default.removeItem(at: storage.directoryURL)
        #expect(try storage.value(forKey: "a") == nil)
        #expect(storage.isCached(forKey: "a") == false)
        #expect(storage.totalSize() == 0)
        try storage.removeAll()
        try storage.store(value: bytes(100), forKey: "b")
        #expect(try storage.value(forKey: "b") == bytes(100))
        try FileManager.default.removeItem(at: directory.url)
        try storage.store(value: bytes(100), forKey: "c")
        #expect(try storage.value(forKey: "c") == bytes(100))
    }

    @Test("a directory that cannot be created gives a typed error, not a crash")
    func unwritableDirectory() throws {
        let storage = try DiskStorage.Backend(config: DiskStorage.Config(name: "cache", directory: URL(fileURLWithPath: "/dev/null/nope")))
        #expect {
            try storage.store(value: Data([1, 2, 3]), forKey: "k")
        } throws: { error in
            guard case HalcyonError.cacheError(reason: .cannotCreateDirectory) = error else { return false }
            return true
        }
        #expect(try storage.value(forKey: "k") == nil)
    }

    @Test("writes leave no temporary files; stale ones from crashed writers are swept")
    func temporaryFiles() throws {
        let directory = TemporaryDirectory()
        defer { directory.remove() }
        let clock = TestClock(Date())
        let storage = try makeStorage(in: directory, clock: clock)
        for index in 0..<20 { try storage.store(value: bytes(500), forKey: "k\(index)") }
        let all = try FileManager.default.contentsOfDirectory(atPath: storage.directoryURL.path)
        #expect(all.count == 20)
        #expect(all.allSatisfy { !$0.hasPrefix(".") })
        let entries = storage.totalSize()
        let stale = storage.directoryURL.appendingPathComponent(".abc.123.xyz.tmp")
        try bytes(1_000).write(to: stale)
        #expect(storage.totalSize() == entries, "temporary files are not entries")
        clock.advance(by: 3_600)
        storage.removeExpiredValues()
        #expect(FileManager.default.fileExists(atPath: stale.path) == false)
    }

    // MARK: - Checksum

    @Test("the entry checksum is XXH64 and streams in pieces")
    func checksum() {
        #expect(EntryChecksum.hash(UnsafeRawBufferPointer(start: nil, count: 0)) == 0xEF46_DB37_51D8_E999)
        let data = Array(bytes(1_000, seed: 9))
        let whole = data.withUnsafeBytes { EntryChecksum.hash($0) }
        for split in [0, 1, 7, 31, 32, 33, 500, 999, 1_000] {
            let parts = data.withUnsafeBytes { raw in
                EntryChecksum.hash(UnsafeRawBufferPointer(rebasing: raw[0..<split]), UnsafeRawBufferPointer(rebasing: raw[split...]))
            }
            #expect(parts == whole, "split at \(split)")
        }
        var flipped = data
        flipped[500] ^= 1
        #expect(flipped.withUnsafeBytes { EntryChecksum.hash($0) } != whole)
    }

    // MARK: - Concurrency and processes

    @Test("threads storing and reading the same keys never see a torn value")
    func concurrentThreads() async throws {
        let directory = TemporaryDirectory()
        defer { directory.remove() }
        let storage = try makeStorage(in: directory)
        let bad = await withTaskGroup(of: Int.self) { group in
            for writer in 0..<4 {
                group.addTask {
                    var bad = 0
                    for round in 0..<30 {
                        let key = (round * 3 + writer) % 10
                        try? storage.store(value: stressPayload(key: key, writer: writer, round: round), forKey: "key-\(key)")
                        if let data = try? storage.value(forKey: "key-\((key + 1) % 10)"), !isValidStressPayload(data, key: (key + 1) % 10) {
                            bad += 1
                        }
                    }
                    return bad
                }
            }
            return await group.reduce(0, +)
        }
        #expect(bad == 0)
    }

    @Test("a writer killed with SIGKILL in the middle of 1000 stores leaves no corrupt entry")
    func killedWriter() async throws {
        let executable = try #require(stressExecutableURL(), "halcyon-cache-stress must be built next to the tests")
        let directory = TemporaryDirectory()
        defer { directory.remove() }
        let cacheDirectory = directory.url.appendingPathComponent("cache")
        let process = Process()
        process.executableURL = executable
        process.arguments = ["store", cacheDirectory.path, "1000", "1"]
        process.standardOutput = FileHandle.nullDevice
        try process.run()
        var stored = 0
        let deadline = Date().addingTimeInterval(20)
        while stored < 100, Date() < deadline, process.isRunning {
            try await Task.sleep(nanoseconds: 2_000_000)
            // Entry files only: a temporary file (dot-prefixed) being written is not an entry yet.
            stored = ((try? FileManager.default.contentsOfDirectory(atPath: cacheDirectory.path)) ?? []).count { !$0.hasPrefix(".") }
        }
        #expect(process.isRunning, "the writer must still be writing when killed")
        kill(process.processIdentifier, SIGKILL)
        process.waitUntilExit()
        #expect(process.terminationReason == .uncaughtSignal)

        let storage = try DiskStorage.Backend(config: DiskStorage.Config(name: "cache", directory: directory.url))
        var hits = 0
        for key in 0..<1000 {
            guard let data = try storage.value(forKey: "key-\(key)") else { continue }
            #expect(isValidStressPayload(data, key: key), "key \(key)")
            hits += 1
        }
        let entries = try FileManager.default.contentsOfDirectory(atPath: cacheDirectory.path).filter { !$0.hasPrefix(".") }
        #expect(hits >= 100)
        #expect(hits < 1000)
        #expect(entries.count == hits, "every entry file on disk is a valid entry")
    }

    @Test("two processes storing and reading the same keys never serve a torn file")
    func twoProcesses() async throws {
        let executable = try #require(stressExecutableURL(), "halcyon-cache-stress must be built next to the tests")
        let directory = TemporaryDirectory()
        defer { directory.remove() }
        let cacheDirectory = directory.url.appendingPathComponent("shared")
        var processes: [Process] = []
        for writer in 1...2 {
            let process = Process()
            process.executableURL = executable
            // The second process re-dates entries in place on every hit, racing the other's reads.
            process.arguments = ["hammer", cacheDirectory.path, "60", "5", "\(writer)", writer == 2 ? "0" : "1"]
            process.standardOutput = FileHandle.nullDevice
            try process.run()
            processes.append(process)
        }
        for process in processes {
            while process.isRunning { try await Task.sleep(nanoseconds: 5_000_000) }
            #expect(process.terminationReason == .exit)
            #expect(process.terminationStatus == 0, "a process read a torn or wrong payload")
        }
        let storage = try DiskStorage.Backend(config: DiskStorage.Config(name: "shared", directory: directory.url))
        for key in 0..<60 {
            let data = try #require(try storage.value(forKey: "key-\(key)"))
            #expect(isValidStressPayload(data, key: key))
        }
    }
}

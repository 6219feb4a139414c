import Foundation
@testable import Halcyon
@testable import HalcyonRedis
import Testing

/// The storage tiers below the local caches: the disk one and the Redis one,
/// each against real storage (a folder, a `redis-server` on loopback).
@Suite("Data storage tiers", .serialized)
struct DataStorageTierTests {
    private static func value(_ size: Int, seed: UInt8 = 7) -> StoredData {
        var bytes = [UInt8](repeating: 0, count: size)
        var state = UInt32(seed) &* 2_654_435_761
        for index in bytes.indices {
            state = state &* 1_103_515_245 &+ 12_345
            bytes[index] = UInt8(truncatingIfNeeded: state >> 16)
        }
        // CR/LF and RESP-looking bytes inside the value.
        if size > 8 { bytes.replaceSubrange(0..<8, with: Array("$5\r\n*1\r\n".utf8)) }
        return StoredData(data: Data(bytes), contentType: "image/webp", etag: "\"abc\"",
                          created: Date(timeIntervalSince1970: 1_700_000_000.123))
    }

    /// The checks every tier must pass: round trip, contains, remove, lifetime.
    private static func exercise(_ tier: any DataStorageTier, keepsCreated: Bool) async throws {
        let stored = value(300_000)
        try await tier.store(stored, forKey: "k/1 ünïcode", lifetime: nil)
        let read = try #require(try await tier.value(forKey: "k/1 ünïcode"))
        #expect(read.data == stored.data)
        #expect(read.contentType == "image/webp")
        #expect(read.etag == "\"abc\"")
        if keepsCreated {
            #expect(abs(read.created.timeIntervalSince(stored.created)) < 0.002)
        } else {
            #expect(abs(read.created.timeIntervalSinceNow) < 10, "the disk tier dates a value by its write")
        }
        #expect(try await tier.containsValue(forKey: "k/1 ünïcode"))
        #expect(try await tier.value(forKey: "missing") == nil)
        #expect(try await !tier.containsValue(forKey: "missing"))
        try await tier.removeValue(forKey: "k/1 ünïcode")
        #expect(try await tier.value(forKey: "k/1 ünïcode") == nil)

        let storedAt = ContinuousClock.now
        try await tier.store(value(100), forKey: "short", lifetime: .seconds(1))
        let early = try await tier.value(forKey: "short")
        // On a loaded machine the read may come after the lifetime: then only the expiry can be judged.
        if ContinuousClock.now - storedAt < .milliseconds(800) { #expect(early != nil, "\(tier.name) lost a live value") }
        try await Task.sleep(for: .milliseconds(1500))
        #expect(try await tier.value(forKey: "short") == nil, "\(tier.name) served an expired value")
    }

    @Test("Disk tier: round trip, contains, remove and lifetime")
    func diskTier() async throws {
        let folder = FileManager.default.temporaryDirectory.appendingPathComponent("halcyon-tier-\(UUID().uuidString)")
        defer { try? FileManager.default.removeItem(at: folder) }
        try await Self.exercise(try DiskDataStorage(name: "tier", folder: folder, megabytes: 16), keepsCreated: false)
    }

    @Test("Disk tier: a call from a cancelled task does nothing and says so")
    func diskTierCancelled() async throws {
        let folder = FileManager.default.temporaryDirectory.appendingPathComponent("halcyon-tier-\(UUID().uuidString)")
        defer { try? FileManager.default.removeItem(at: folder) }
        let tier = try DiskDataStorage(name: "tier", folder: folder, megabytes: 16)
        let task = Task {
            withUnsafeCurrentTask { $0?.cancel() }
            try await tier.store(Self.value(10), forKey: "never", lifetime: nil)
        }
        await #expect(throws: HalcyonError.self) { try await task.value }
        #expect(try await tier.value(forKey: "never") == nil)
    }

    @Test("Redis tier: round trip, contains, remove and lifetime against redis-server")
    func redisTier() async throws {
        let redis = try await RedisServerProcess.start()
        defer { redis.stop() }
        let client = RedisClient(configuration: try RedisConfiguration(url: redis.url))
        try await Self.exercise(RedisDataStorage(client: client), keepsCreated: true)
        await client.shutdown()
    }

    @Test("Redis tier: an entry that is not an envelope is a miss and is deleted")
    func redisCorruptEntry() async throws {
        let redis = try await RedisServerProcess.start()
        defer { redis.stop() }
        let client = RedisClient(configuration: try RedisConfiguration(url: redis.url))
        let tier = RedisDataStorage(client: client)
        _ = redis.cli(["SET", "halcyon:r1:bad", "HCR1 this is torn"])
        #expect(try await tier.value(forKey: "bad") == nil)
        #expect(redis.cli(["EXISTS", "halcyon:r1:bad"]).trimmingCharacters(in: .whitespacesAndNewlines) == "0")
        await client.shutdown()
    }

    @Test("Redis tier: an unreachable server is storageUnavailable, quickly")
    func redisUnreachable() async throws {
        let port = try RedisServerProcess.freeLoopbackPort()
        var configuration = try RedisConfiguration(url: "redis://127.0.0.1:\(port)/0")
        configuration.connectTimeout = .milliseconds(300)
        let client = RedisClient(configuration: configuration)
        let tier = RedisDataStorage(client: client)
        let started = ContinuousClock.now
        do {
            _ = try await tier.value(forKey: "x")
            Issue.record("a dead server answered")
        } catch {
            guard case .cacheError(.storageUnavailable(let name, _)) = error else {
                Issue.record("wrong error \(error)")
                return
            }
            #expect(name == "redis")
        }
        #expect(ContinuousClock.now - started < .seconds(2))
        await client.shutdown()
    }

    @Test("Envelope: every field survives, absent fields stay absent, truncated envelopes are refused")
    func envelope() {
        let full = Self.value(1000)
        #expect(StoredDataEnvelope.decode(StoredDataEnvelope.encode(full)) == StoredData(
            data: full.data, contentType: full.contentType, etag: full.etag, created: Date(timeIntervalSince1970: 1_700_000_000.123)))
        let bare = StoredData(data: Data(), contentType: nil, etag: nil, created: Date(timeIntervalSince1970: 0))
        #expect(StoredDataEnvelope.decode(StoredDataEnvelope.encode(bare)) == bare)
        let encoded = StoredDataEnvelope.encode(full)
        for cut in [0, 3, 4, 11, 13, 20] {
            #expect(StoredDataEnvelope.decode(Array(encoded.prefix(cut))) == nil, "prefix \(cut)")
        }
        #expect(StoredDataEnvelope.decode(Array("HCR2".utf8) + encoded.dropFirst(4)) == nil)
    }
}

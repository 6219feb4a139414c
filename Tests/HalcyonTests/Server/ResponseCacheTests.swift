import Foundation
@testable import HalcyonServer
import NIOCore
import Testing

/// The server's response cache: one copy of each body, a limit that counts what entries really hold, HTTP dates.
@Suite("Server: response cache")
struct ResponseCacheTests {
    static func entry(_ size: Int, seed: UInt8 = 1) -> ResponseCache.Entry {
        ResponseCache.Entry(body: Data((0..<size).map { UInt8(truncatingIfNeeded: $0) &+ seed }), contentType: "image/jpeg", etag: "\"e\(seed)\"")
    }

    @Test("An entry's Data and ByteBuffer share one copy of the body")
    func oneCopy() {
        let entry = Self.entry(50_000)
        let dataStart = entry.body.withUnsafeBytes { UInt(bitPattern: $0.baseAddress) }
        let bufferStart = entry.buffer.withUnsafeReadableBytes { UInt(bitPattern: $0.baseAddress) }
        #expect(dataStart == bufferStart)
        #expect(entry.body == Data(entry.buffer.readableBytesView))
    }

    @Test("Bodies and keys together stay inside the limit; the newest entries stay")
    func limitCountsKeys() {
        let cache = ResponseCache(limit: 64 * 1024, lifetime: 300)
        let longKey = String(repeating: "k", count: 1024)
        for index in 0..<100 {
            cache.store(Self.entry(1024, seed: UInt8(index)), for: .init(path: "\(index)" + longKey))
        }
        let held = (0..<100).filter { cache.value(for: .init(path: "\($0)" + longKey)) != nil }
        let bytes = held.reduce(0) { $0 + 1024 + ("\($1)" + longKey).utf8.count }
        #expect(bytes <= 64 * 1024, "\(held.count) entries hold \(bytes) bytes of bodies and keys")
        #expect(held.contains(99) && !held.contains(0))
        #expect(cache.heldBytes <= 64 * 1024)
    }

    @Test("A hit counts as a use: the least recently used entry goes first")
    func hitsCountAsUse() {
        let key = { (index: Int) in "k\(index)" }
        let cost = ResponseCache.cost(of: Self.entry(1000), key: .init(path: key(0)))
        let cache = ResponseCache(limit: 4 * cost, lifetime: 300)
        for index in 0..<4 { cache.store(Self.entry(1000, seed: UInt8(index)), for: .init(path: key(index))) }
        #expect(cache.value(for: .init(path: key(0))) != nil)
        cache.store(Self.entry(1000, seed: 9), for: .init(path: key(4)))
        #expect((0..<5).map { cache.value(for: .init(path: key($0))) != nil } == [true, false, true, true, true])
    }

    @Test("An answer too large to keep also drops the older answer under its key")
    func tooLargeReplacesOlder() {
        let cache = ResponseCache(limit: 64 * 1024, lifetime: 300)
        cache.store(Self.entry(1000), for: .init(path: "k"))
        #expect(cache.value(for: .init(path: "k")) != nil)
        cache.store(Self.entry(20_000), for: .init(path: "k"))
        #expect(cache.value(for: .init(path: "k")) == nil && cache.heldBytes == 0)
    }

    @Test("An answer to an exp: URL is not given after that time and no longer held")
    func urlExpiryRemovesEntry() {
        let cache = ResponseCache(limit: 64 * 1024, lifetime: 300)
        let created = Date(timeIntervalSince1970: 1_000_000)
        var entry = ResponseCache.Entry(body: Data(count: 2000), contentType: "image/png", etag: "\"x\"", created: created)
        entry.expires = 1_000_010
        cache.store(entry, for: .init(path: "k"))
        #expect(cache.value(for: .init(path: "k"), now: created.addingTimeInterval(9)) != nil)
        #expect(cache.counts.entries == 1 && cache.heldBytes > 0)
        #expect(cache.value(for: .init(path: "k"), now: created.addingTimeInterval(11)) == nil)
        #expect(cache.counts.entries == 0 && cache.heldBytes == 0, "the expired answer must not stay in memory")
    }

    @Test("Random stores, replacements, hits and expiries keep exactly the entries a plain LRU list keeps")
    func matchesPlainLRU() {
        var generator = SeededGenerator(state: 16)
        let (limit, lifetime) = (40 * 1024, 3.0)
        let cache = ResponseCache(limit: limit, lifetime: lifetime)
        var model: [(key: String, cost: Int, created: Date)] = []  // least recently used first
        var (expiries, evictions) = (0, 0)
        let start = Date()
        for step in 0..<6000 {
            let key = "k\(generator.next() % 40)"
            let now = start.addingTimeInterval(Double(step) * 0.1)
            if generator.next() % 3 == 0 {
                let entry = ResponseCache.Entry(body: Data(count: Int(generator.next() % 3000)), contentType: "image/png",
                                                etag: "\"\(step)\"", created: now)
                let cost = ResponseCache.cost(of: entry, key: .init(path: key))
                cache.store(entry, for: .init(path: key))
                model.removeAll { $0.key == key }
                guard cost <= limit / 4 else { continue }
                model.append((key, cost, now))
                while model.reduce(0, { $0 + $1.cost }) > limit { model.removeFirst(); evictions += 1 }
            } else {
                let found = cache.value(for: .init(path: key), now: now) != nil
                let index = model.firstIndex { $0.key == key }
                let fresh = index.map { now.timeIntervalSince(model[$0].created) <= lifetime } ?? false
                #expect(found == fresh, "step \(step): \(key)")
                if let index {
                    let use = model.remove(at: index)
                    if fresh { model.append(use) } else { expiries += 1 }
                }
            }
            #expect(cache.heldBytes == model.reduce(0) { $0 + $1.cost } && cache.heldBytes <= limit, "step \(step)")
        }
        #expect(cache.counts.entries == model.count)
        #expect(expiries > 100 && evictions > 100, "\(expiries) expiries and \(evictions) evictions exercised")
    }

    @Test("Evicted and expired entries' slots are reused: the slots made stay at the most entries ever held")
    func slotsAreReused() {
        let cost = ResponseCache.cost(of: Self.entry(100), key: .init(path: "k00000"))
        let cache = ResponseCache(limit: 8 * cost, lifetime: 300)
        for index in 0..<10_000 { cache.store(Self.entry(100, seed: UInt8(truncatingIfNeeded: index)), for: .init(path: String(format: "k%05d", index))) }
        let start = Date()
        _ = cache.value(for: .init(path: "k09999"), now: start.addingTimeInterval(301))
        for index in 0..<100 { _ = cache.value(for: .init(path: String(format: "k%05d", 9_990 + index % 10))) }
        let counts = cache.counts
        #expect(counts.entries == 7 && counts.slots <= 9, "\(counts)")
        #expect((9_990..<10_000).map { cache.value(for: .init(path: String(format: "k%05d", $0))) != nil } == (9_990..<10_000).map { (9_992..<9_999).contains($0) })
        #expect(cache.heldBytes == 7 * cost)
    }

    @Test("HTTP dates match the IMF-fixdate a POSIX DateFormatter makes")
    func httpDates() {
        let formatter = DateFormatter()
        formatter.locale = Locale(identifier: "en_US_POSIX")
        formatter.timeZone = TimeZone(identifier: "GMT")
        formatter.dateFormat = "EEE, dd MMM yyyy HH:mm:ss 'GMT'"
        var generator = SystemRandomNumberGenerator()
        let dates = [0, 951_782_400, 1_709_164_799, 4_102_444_799].map { Date(timeIntervalSince1970: $0) }
            + (0..<500).map { _ in Date(timeIntervalSince1970: Double(generator.next() % 4_102_444_800) + 0.75) }
        for date in dates {
            #expect(ResponseCache.httpDate(date) == formatter.string(from: date), "\(date.timeIntervalSince1970)")
        }
    }

    @Test("Dates a damaged entry could carry give a well-formed HTTP date, never a trap")
    func oddDates() {
        let odd: [Double] = [.nan, .infinity, -.infinity, -1e300, 1e300, -1, 1e12, Double(Int64.max)]
        for value in odd {
            let text = ResponseCache.httpDate(Date(timeIntervalSince1970: value))
            #expect(text.count == 29 && text.hasSuffix(" GMT"), "\(value): \(text)")
        }
        #expect(ResponseCache.httpDate(Date(timeIntervalSince1970: .nan)) == "Thu, 01 Jan 1970 00:00:00 GMT")
        #expect(ResponseCache.httpDate(Date(timeIntervalSince1970: 1e300)) == "Fri, 31 Dec 9999 23:59:59 GMT")
    }
}

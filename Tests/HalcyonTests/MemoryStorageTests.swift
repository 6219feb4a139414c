import Foundation
import Testing
@testable import Halcyon

/// A value with a chosen cost.
private struct Blob: CacheCostCalculable, Sendable, Equatable {
    let id: Int
    let cacheCost: Int
}

@Suite("MemoryStorage")
struct MemoryStorageTests {
    private func makeStorage(
        costLimit: Int = 10_000, countLimit: Int = 0, expiration: StorageExpiration = .seconds(300),
        clock: TestClock = TestClock()
    ) -> MemoryStorage.Backend<Blob> {
        MemoryStorage.Backend(
            config: MemoryStorage.Config(totalCostLimit: costLimit, countLimit: countLimit, expiration: expiration, cleanInterval: 0),
            clock: clock.cacheClock)
    }

    @Test("stores, reads, replaces and removes values")
    func storeAndRead() {
        let storage = makeStorage()
        storage.store(value: Blob(id: 1, cacheCost: 10), forKey: "a")
        storage.store(value: Blob(id: 2, cacheCost: 20), forKey: "b")
        #expect(storage.value(forKey: "a") == Blob(id: 1, cacheCost: 10))
        #expect(storage.isCached(forKey: "b"))
        #expect(storage.totalCost == 30)
        storage.store(value: Blob(id: 3, cacheCost: 5), forKey: "a")
        #expect(storage.value(forKey: "a")?.id == 3)
        #expect(storage.totalCost == 25)
        #expect(storage.count == 2)
        storage.remove(forKey: "a")
        #expect(storage.value(forKey: "a") == nil)
        #expect(storage.totalCost == 20)
        storage.removeAll()
        #expect(storage.count == 0)
        #expect(storage.totalCost == 0)
        #expect(storage.value(forKey: "b") == nil)
    }

    @Test("values expire by the injected clock")
    func expirationWithClock() {
        let clock = TestClock()
        let storage = makeStorage(clock: clock)
        storage.store(value: Blob(id: 1, cacheCost: 1), forKey: "s", expiration: .seconds(10))
        storage.store(value: Blob(id: 2, cacheCost: 1), forKey: "d", expiration: .days(1))
        storage.store(value: Blob(id: 3, cacheCost: 1), forKey: "date", expiration: .date(clock.now.addingTimeInterval(50)))
        storage.store(value: Blob(id: 4, cacheCost: 1), forKey: "never", expiration: .never)
        clock.advance(by: 9)
        #expect(storage.value(forKey: "s", extendingExpiration: .none) != nil)
        clock.advance(by: 2)
        #expect(storage.isCached(forKey: "s") == false)
        #expect(storage.value(forKey: "s") == nil)
        #expect(storage.count == 3, "an expired value is removed when read")
        clock.advance(by: 40)
        #expect(storage.value(forKey: "date") == nil)
        #expect(storage.value(forKey: "d") != nil)
        clock.advance(by: 86_400)
        #expect(storage.value(forKey: "d") == nil)
        clock.advance(by: 1e9)
        #expect(storage.value(forKey: "never") != nil)
    }

    @Test("the default expiration applies when none is given, and .expired is never stored")
    func defaultAndExpired() {
        let clock = TestClock()
        let storage = makeStorage(expiration: .seconds(5), clock: clock)
        storage.store(value: Blob(id: 1, cacheCost: 1), forKey: "a")
        clock.advance(by: 6)
        #expect(storage.value(forKey: "a") == nil)
        storage.store(value: Blob(id: 2, cacheCost: 1), forKey: "b", expiration: .never)
        storage.store(value: Blob(id: 3, cacheCost: 1), forKey: "b", expiration: .expired)
        #expect(storage.value(forKey: "b") == nil, "storing an expired value removes the old one")
        storage.store(value: Blob(id: 4, cacheCost: 1), forKey: "c", expiration: .date(clock.now.addingTimeInterval(-1)))
        #expect(storage.count == 0)
    }

    @Test("reads slide the expiration with .cacheTime, not with .none")
    func slidingExpiration() {
        let clock = TestClock()
        let storage = makeStorage(clock: clock)
        storage.store(value: Blob(id: 1, cacheCost: 1), forKey: "slide", expiration: .seconds(10))
        storage.store(value: Blob(id: 2, cacheCost: 1), forKey: "fixed", expiration: .seconds(10))
        clock.advance(by: 8)
        #expect(storage.value(forKey: "slide", extendingExpiration: .cacheTime) != nil)
        #expect(storage.value(forKey: "fixed", extendingExpiration: .none) != nil)
        clock.advance(by: 7)
        #expect(storage.value(forKey: "fixed", extendingExpiration: .none) == nil)
        #expect(storage.value(forKey: "slide", extendingExpiration: .cacheTime) != nil)
        #expect(storage.value(forKey: "slide", extendingExpiration: .expirationTime(.seconds(1000))) != nil)
        clock.advance(by: 900)
        #expect(storage.value(forKey: "slide", extendingExpiration: .none) != nil)
        clock.advance(by: 200)
        #expect(storage.value(forKey: "slide") == nil)
    }

    @Test("cost eviction removes least recently used values first")
    func costEvictionOrder() {
        let storage = makeStorage(costLimit: 300)
        storage.store(value: Blob(id: 1, cacheCost: 100), forKey: "a")
        storage.store(value: Blob(id: 2, cacheCost: 100), forKey: "b")
        storage.store(value: Blob(id: 3, cacheCost: 100), forKey: "c")
        #expect(storage.value(forKey: "a") != nil)
        storage.store(value: Blob(id: 4, cacheCost: 100), forKey: "d")
        #expect(storage.keysByRecency == ["d", "a", "c"])
        storage.store(value: Blob(id: 5, cacheCost: 200), forKey: "e")
        #expect(storage.keysByRecency == ["e", "d"])
        #expect(storage.totalCost == 300)
    }

    @Test("count eviction removes least recently used values first")
    func countEvictionOrder() {
        let storage = makeStorage(countLimit: 3)
        for (index, key) in ["a", "b", "c"].enumerated() {
            storage.store(value: Blob(id: index, cacheCost: 1), forKey: key)
        }
        _ = storage.value(forKey: "a")
        _ = storage.value(forKey: "b")
        storage.store(value: Blob(id: 9, cacheCost: 1), forKey: "d")
        #expect(storage.keysByRecency == ["d", "b", "a"])
        storage.config.countLimit = 1
        #expect(storage.keysByRecency == ["d"])
    }

    @Test("a value costlier than the whole limit is not stored and drops the old value")
    func oversizedValue() {
        let storage = makeStorage(costLimit: 100)
        storage.store(value: Blob(id: 1, cacheCost: 50), forKey: "a")
        storage.store(value: Blob(id: 2, cacheCost: 10), forKey: "b")
        storage.store(value: Blob(id: 3, cacheCost: 101), forKey: "a")
        #expect(storage.value(forKey: "a") == nil)
        #expect(storage.value(forKey: "b") != nil)
        #expect(storage.totalCost == 10)
    }

    @Test("removeExpired sweeps only expired values")
    func removeExpired() {
        let clock = TestClock()
        let storage = makeStorage(clock: clock)
        for index in 0..<10 {
            storage.store(value: Blob(id: index, cacheCost: 1), forKey: "k\(index)", expiration: .seconds(TimeInterval(index + 1)))
        }
        clock.advance(by: 5.5)
        storage.removeExpired()
        #expect(storage.count == 5)
        #expect(Set(storage.keysByRecency) == Set((5..<10).map { "k\($0)" }))
    }

    @Test("the periodic clean removes expired values without a run loop and stops with the storage")
    func periodicClean() async throws {
        let clock = TestClock()
        var storage: MemoryStorage.Backend<Blob>? = MemoryStorage.Backend(
            config: MemoryStorage.Config(totalCostLimit: 1_000, cleanInterval: 0.02), clock: clock.cacheClock)
        storage?.store(value: Blob(id: 1, cacheCost: 1), forKey: "short", expiration: .seconds(1))
        storage?.store(value: Blob(id: 2, cacheCost: 1), forKey: "long", expiration: .seconds(100))
        clock.advance(by: 2)
        var waited = 0
        while storage?.count != 1, waited < 200 {
            try await Task.sleep(nanoseconds: 10_000_000)
            waited += 1
        }
        #expect(storage?.count == 1)
        #expect(storage?.keysByRecency == ["long"])
        weak let released = storage
        storage = nil
        waited = 0
        while released != nil, waited < 200 {
            try await Task.sleep(nanoseconds: 10_000_000)
            waited += 1
        }
        #expect(released == nil, "the clean task must not keep the storage alive")
    }

    @Test("the default cost limit is a quarter of memory, at most 1 GiB")
    func defaultLimits() {
        let config = MemoryStorage.Config()
        #expect(config.totalCostLimit > 0)
        #expect(config.totalCostLimit <= 1 << 30)
        #expect(config.totalCostLimit <= Int(ProcessInfo.processInfo.physicalMemory / 4))
        #expect(config.cleanInterval == 120)
        let odd = MemoryStorage.Backend<Blob>(config: MemoryStorage.Config(cleanInterval: 1e300))
        odd.store(value: Blob(id: 1, cacheCost: 1), forKey: "a")
        #expect(odd.count == 1)
    }

    @Test("images are charged their decoded size")
    func imageCost() throws {
        let image = try makeTestImage(width: 10, height: 10)
        #expect(image.cacheCost == image.cost)
        let storage = MemoryStorage.Backend<Image>(config: MemoryStorage.Config(totalCostLimit: image.cost * 2, cleanInterval: 0))
        storage.store(value: image, forKey: "a")
        storage.store(value: image, forKey: "b")
        storage.store(value: image, forKey: "c")
        #expect(storage.count == 2)
        #expect(storage.value(forKey: "c") === image)
    }

    @Test("concurrent stores and reads keep the limits and the accounting")
    func concurrentAccess() async {
        let storage = makeStorage(costLimit: 500, countLimit: 40)
        await withTaskGroup(of: Void.self) { group in
            for worker in 0..<8 {
                group.addTask {
                    for index in 0..<2_000 {
                        let key = "k\((index * 7 + worker) % 97)"
                        if index % 3 == 0 {
                            storage.store(value: Blob(id: index, cacheCost: 1 + index % 20), forKey: key)
                        } else if index % 50 == 0 {
                            storage.remove(forKey: key)
                        } else {
                            _ = storage.value(forKey: key)
                        }
                    }
                }
            }
        }
        #expect(storage.count <= 40)
        #expect(storage.totalCost <= 500)
        #expect(storage.keysByRecency.count == storage.count)
    }
}

import Halcyon
import Testing

/// `LRUList`, the order-of-use bookkeeping behind the memory cache, the response cache and the failed-URL blocklist.
@Suite("LRUList")
struct LRUListTests {
    @Test("Keys come out by recency; a touch moves one to the recent end; the oldest goes first")
    func order() throws {
        var list = LRUList<String, Int>()
        for (cost, key) in ["a", "b", "c"].enumerated() { list.insert(cost, for: key, cost: cost + 1) }
        #expect(list.keysByRecency == ["c", "b", "a"])
        #expect(list.totalCost == 6)
        list.touch(try #require(list.slot(for: "a")))
        #expect(list.keysByRecency == ["a", "c", "b"])
        #expect(list.removeOldest() == 1)
        #expect(list.keysByRecency == ["a", "c"] && list.count == 2 && list.totalCost == 4)
        #expect(list.slot(for: "b") == nil)
    }

    @Test("Storing under a held key replaces its value and cost, hands the old value back and makes it the most recent")
    func replace() throws {
        var list = LRUList<String, String>()
        list.insert("old", for: "k", cost: 10)
        list.insert("other", for: "o", cost: 1)
        #expect(list.insert("new", for: "k", cost: 3) == "old")
        #expect(list.count == 2 && list.totalCost == 4)
        #expect(list.value(at: try #require(list.slot(for: "k"))) == "new")
        #expect(list.keysByRecency == ["k", "o"])
    }

    @Test("Freed slots are reused: a thousand stores with at most four keys held make four slots")
    func slotReuse() {
        var list = LRUList<Int, Int>()
        for key in 0..<1000 {
            list.insert(key, for: key, cost: 1)
            if list.count > 3 { _ = list.removeOldest() }
        }
        #expect(list.count == 3 && list.slotCount == 4 && list.totalCost == 3)
        #expect(list.keysByRecency == [999, 998, 997])
    }

    @Test("removeAll(where:) takes exactly the picked values and keeps the others' order; update keeps recency")
    func removeWhereAndUpdate() throws {
        var list = LRUList<String, Int>()
        for value in 0..<6 { list.insert(value, for: "k\(value)", cost: 1) }
        let removed = list.removeAll { $0.isMultiple(of: 2) }
        #expect(removed.sorted() == [0, 2, 4])
        #expect(list.keysByRecency == ["k5", "k3", "k1"] && list.totalCost == 3)
        let slot = try #require(list.slot(for: "k1"))
        list.update(at: slot) { $0 += 100 }
        #expect(list.value(at: slot) == 101 && list.keysByRecency == ["k5", "k3", "k1"])
        list.removeAll()
        #expect(list.count == 0 && list.totalCost == 0 && list.removeOldest() == nil && list.keysByRecency.isEmpty)
    }
}

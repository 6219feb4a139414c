@testable import Halcyon
import Testing

/// `LRUList`, the order-of-use bookkeeping behind the memory cache, the response cache and the failed-URL blocklist.
@Suite("LRUList")
struct LRUListTests {
    /// Whether the list's two link directions agree: the keys walked from the oldest along the `newer` links are
    /// `keysByRecency` (walked along the `older` links) reversed, and the ends point at the ends.
    static func linksAgree<Key: Hashable, Value>(_ list: LRUList<Key, Value>) -> Bool {
        var keys: [Key] = []
        var cursor = list.oldest
        while cursor >= 0, keys.count <= list.count {
            if let key = list.slots[cursor].key { keys.append(key) }
            cursor = list.slots[cursor].newer
        }
        let ends = list.count == 0 ? list.oldest == -1 && list.newest == -1
            : list.slots[list.oldest].older == -1 && list.slots[list.newest].newer == -1
        return ends && keys == list.keysByRecency.reversed() && keys.count == list.count
    }

    @Test("The links stay consistent through removing the newest, the oldest, a middle one and the only one")
    func links() throws {
        var list = LRUList<String, Int>()
        for (value, key) in ["a", "b", "c", "d"].enumerated() { list.insert(value, for: key, cost: 1) }
        #expect(Self.linksAgree(list))
        list.remove(try #require(list.slot(for: "d")))
        #expect(Self.linksAgree(list) && list.keysByRecency == ["c", "b", "a"])
        list.remove(try #require(list.slot(for: "b")))
        #expect(Self.linksAgree(list) && list.keysByRecency == ["c", "a"])
        list.touch(try #require(list.slot(for: "a")))
        #expect(Self.linksAgree(list) && list.keysByRecency == ["a", "c"])
        #expect(list.removeOldest() == 2)
        #expect(Self.linksAgree(list) && list.keysByRecency == ["a"])
        list.touch(try #require(list.slot(for: "a")))
        #expect(list.removeOldest() == 0)
        #expect(Self.linksAgree(list) && list.count == 0 && list.totalCost == 0)
        list.insert(9, for: "z", cost: 1)
        #expect(Self.linksAgree(list) && list.keysByRecency == ["z"] && list.slotCount == 4)
    }

    @Test("Keys come out by recency; a touch moves one to the recent end; the oldest goes first")
    func order() throws {
        var list = LRUList<String, Int>()
        for (cost, key) in ["a", "b", "c"].enumerated() { list.insert(cost, for: key, cost: cost + 1) }
        #expect(list.keysByRecency == ["c", "b", "a"])
        #expect(list.totalCost == 6)
        list.touch(try #require(list.slot(for: "a")))
        #expect(list.keysByRecency == ["a", "c", "b"] && Self.linksAgree(list))
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
        #expect(list.keysByRecency == [999, 998, 997] && Self.linksAgree(list))
    }

    @Test("removeAll(where:) takes exactly the picked values and keeps the others' order; update keeps recency")
    func removeWhereAndUpdate() throws {
        var list = LRUList<String, Int>()
        for value in 0..<6 { list.insert(value, for: "k\(value)", cost: 1) }
        let removed = list.removeAll { $0.isMultiple(of: 2) }
        #expect(removed.sorted() == [0, 2, 4])
        #expect(list.keysByRecency == ["k5", "k3", "k1"] && list.totalCost == 3 && Self.linksAgree(list))
        let slot = try #require(list.slot(for: "k1"))
        list.update(at: slot) { $0 += 100 }
        #expect(list.value(at: slot) == 101 && list.keysByRecency == ["k5", "k3", "k1"])
        list.removeAll()
        #expect(list.count == 0 && list.totalCost == 0 && list.removeOldest() == nil && list.keysByRecency.isEmpty)
    }

    @Test("evictOldest takes the least recently used values while the cost or the count is over its limit")
    func evictOldest() throws {
        var list = LRUList<String, Int>()
        for (value, key) in ["a", "b", "c", "d"].enumerated() { list.insert(value, for: key, cost: 10) }
        list.touch(try #require(list.slot(for: "a")))
        #expect(list.evictOldest(whileCostAbove: 25) == [1, 2])
        #expect(list.keysByRecency == ["a", "d"] && list.totalCost == 20 && Self.linksAgree(list))
        #expect(list.evictOldest(whileCostAbove: .max, orCountAbove: 1) == [3])
        #expect(list.keysByRecency == ["a"] && list.evictOldest(whileCostAbove: 10).isEmpty)
    }
}

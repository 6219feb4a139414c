/// Values by key in order of use, with a cost each: the least-recently-used bookkeeping behind the memory
/// cache, the server's response cache and the failed-URL blocklist.
///
/// A doubly linked list threaded by index through one array of slots, and a dictionary from key to slot. A
/// lookup hashes the key once and hands back the slot, so reading a value and moving it to the recent end
/// need no second hash; storing, moving and evicting take constant time, and freed slots are reused, so
/// steady-state use allocates nothing. Removals hand the value back, so an owner can release it after its
/// lock. A slot is valid from the lookup that returned it to the next change; a freed one is a programming
/// error (asserted in debug builds). Not thread-safe: its owner guards it.
@usableFromInline
package struct LRUList<Key: Hashable, Value> {
    @usableFromInline
    struct Slot {
        @usableFromInline var key: Key?
        @usableFromInline var value: Value?
        @usableFromInline var cost: Int
        /// The next less recently used slot, or -1.
        @usableFromInline var older: Int
        /// The next more recently used slot, or -1.
        @usableFromInline var newer: Int

        @inlinable
        init(key: Key?, value: Value?, cost: Int, older: Int, newer: Int) {
            self.key = key
            self.value = value
            self.cost = cost
            self.older = older
            self.newer = newer
        }
    }

    @usableFromInline var slots: [Slot] = []
    @usableFromInline var index: [Key: Int] = [:]
    @usableFromInline var unused: [Int] = []
    @usableFromInline var newest = -1
    @usableFromInline var oldest = -1
    /// The summed cost of the values held.
    @usableFromInline package private(set) var totalCost = 0

    /// Makes an empty list.
    @inlinable
    package init() {}

    /// How many values are held.
    @inlinable
    package var count: Int { index.count }

    /// How many slots exist, freed ones included (freed slots are reused before new ones are made).
    package var slotCount: Int { slots.count }

    // MARK: - Reading

    /// The slot holding `key`'s value, if any; one hash of the key.
    @inlinable
    package func slot(for key: Key) -> Int? { index[key] }

    /// The value in `slot`, a slot ``slot(for:)`` returned since the last change.
    @inlinable
    package func value(at slot: Int) -> Value? {
        assert(slots[slot].key != nil, "a freed slot")
        return slots[slot].value
    }

    /// Changes the value in `slot` in place; its cost and recency stay.
    @inlinable
    package mutating func update(at slot: Int, _ body: (inout Value) -> Void) {
        assert(slots[slot].key != nil, "a freed slot")
        guard var value = slots[slot].value else { return }
        slots[slot].value = nil
        body(&value)
        slots[slot].value = value
    }

    /// The keys from the most to the least recently used.
    package var keysByRecency: [Key] {
        var keys: [Key] = []
        keys.reserveCapacity(count)
        var cursor = newest
        while cursor >= 0 {
            if let key = slots[cursor].key { keys.append(key) }
            cursor = slots[cursor].older
        }
        return keys
    }

    // MARK: - Changing

    /// Marks `slot` as the most recently used.
    @inlinable
    package mutating func touch(_ slot: Int) {
        assert(slots[slot].key != nil, "a freed slot")
        guard slot != newest else { return }
        unlink(slot)
        append(slot)
    }

    /// Stores `value` under `key` as the most recently used, replacing the value there; returns what it replaced.
    @inlinable
    @discardableResult
    package mutating func insert(_ value: Value, for key: Key, cost: Int) -> Value? {
        if let slot = index[key] {
            totalCost += cost - slots[slot].cost
            let replaced = slots[slot].value
            slots[slot].value = value
            slots[slot].cost = cost
            touch(slot)
            return replaced
        }
        let fresh = Slot(key: key, value: value, cost: cost, older: -1, newer: -1)
        let slot: Int
        if let reused = unused.popLast() {
            slots[reused] = fresh
            slot = reused
        } else {
            slot = slots.count
            slots.append(fresh)
        }
        index[key] = slot
        totalCost += cost
        append(slot)
        return nil
    }

    /// Removes the value in `slot` and frees the slot; returns the value.
    @inlinable
    @discardableResult
    package mutating func remove(_ slot: Int) -> Value? {
        assert(slots[slot].key != nil, "a freed slot")
        unlink(slot)
        if let key = slots[slot].key { index.removeValue(forKey: key) }
        totalCost -= slots[slot].cost
        let value = slots[slot].value
        slots[slot] = Slot(key: nil, value: nil, cost: 0, older: -1, newer: -1)
        unused.append(slot)
        return value
    }

    /// Removes the value under `key`, if any, and returns it.
    @inlinable
    @discardableResult
    package mutating func removeValue(forKey key: Key) -> Value? {
        guard let slot = index[key] else { return nil }
        return remove(slot)
    }

    /// Removes the least recently used value and returns it; nil when the list is empty.
    @inlinable
    package mutating func removeOldest() -> Value? {
        guard oldest >= 0 else { return nil }
        return remove(oldest)
    }

    /// Removes least recently used values while their summed cost is over `costLimit` or their number over
    /// `countLimit`, and returns them, so the owner releases them after its lock.
    @inlinable
    package mutating func evictOldest(whileCostAbove costLimit: Int, orCountAbove countLimit: Int = .max) -> [Value] {
        var evicted: [Value] = []
        while totalCost > costLimit || count > countLimit, let value = removeOldest() {
            evicted.append(value)
        }
        return evicted
    }

    /// Removes every value `shouldRemove` picks, walking from the most recently used, and returns them.
    package mutating func removeAll(where shouldRemove: (Value) -> Bool) -> [Value] {
        var removed: [Value] = []
        var cursor = newest
        while cursor >= 0 {
            let older = slots[cursor].older
            if let value = slots[cursor].value, shouldRemove(value) {
                remove(cursor)
                removed.append(value)
            }
            cursor = older
        }
        return removed
    }

    /// Removes every value and slot.
    package mutating func removeAll() {
        slots.removeAll()
        index.removeAll()
        unused.removeAll()
        newest = -1
        oldest = -1
        totalCost = 0
    }

    // MARK: - Links

    @inlinable
    mutating func unlink(_ slot: Int) {
        let (older, newer) = (slots[slot].older, slots[slot].newer)
        if older >= 0 { slots[older].newer = newer } else if oldest == slot { oldest = newer }
        if newer >= 0 { slots[newer].older = older } else if newest == slot { newest = older }
        slots[slot].older = -1
        slots[slot].newer = -1
    }

    @inlinable
    mutating func append(_ slot: Int) {
        slots[slot].older = newest
        slots[slot].newer = -1
        if newest >= 0 { slots[newest].newer = slot } else { oldest = slot }
        newest = slot
    }
}

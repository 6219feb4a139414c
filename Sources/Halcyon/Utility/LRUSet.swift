/// A set that keeps at most `limit` elements, dropping the least recently
/// used one (inserted or found) when a new element would exceed it.
///
/// A doubly linked list threaded through a dictionary: every operation is
/// O(1). Not thread-safe; its owner guards it.
struct LRUSet<Element: Hashable> {
    private struct Links {
        var older: Element?
        var newer: Element?
    }

    /// Most elements kept.
    let limit: Int
    private var links: [Element: Links] = [:]
    private var oldest: Element?
    private var newest: Element?

    /// Makes an empty set keeping at most `limit` (at least 1) elements.
    init(limit: Int) { self.limit = max(1, limit) }

    /// How many elements are kept.
    var count: Int { links.count }

    /// Whether `element` is in the set; a hit marks it as just used.
    mutating func contains(_ element: Element) -> Bool {
        guard links[element] != nil else { return false }
        unlink(element)
        append(element)
        return true
    }

    /// Adds `element` (or marks it as just used); returns the element dropped to stay within the limit.
    @discardableResult
    mutating func insert(_ element: Element) -> Element? {
        if links[element] != nil {
            unlink(element)
            append(element)
            return nil
        }
        var dropped: Element?
        if links.count >= limit, let victim = oldest {
            unlink(victim)
            dropped = victim
        }
        append(element)
        return dropped
    }

    /// Removes `element`.
    mutating func remove(_ element: Element) {
        guard links[element] != nil else { return }
        unlink(element)
    }

    /// Removes every element.
    mutating func removeAll() {
        links.removeAll()
        oldest = nil
        newest = nil
    }

    private mutating func append(_ element: Element) {
        links[element] = Links(older: newest, newer: nil)
        if let newest { links[newest]?.newer = element }
        newest = element
        if oldest == nil { oldest = element }
    }

    private mutating func unlink(_ element: Element) {
        guard let link = links.removeValue(forKey: element) else { return }
        if let older = link.older { links[older]?.newer = link.newer } else { oldest = link.newer }
        if let newer = link.newer { links[newer]?.older = link.older } else { newest = link.older }
    }
}

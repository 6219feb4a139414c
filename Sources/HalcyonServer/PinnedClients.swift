import AsyncHTTPClient

/// The gate's pinned clients, least recently used first, and the evicted ones
/// waiting out their grace period before they are shut down.
struct PinnedClients {
    private var clients: [String: HTTPClient] = [:]
    private var order: [String] = []
    private var retiring: [ObjectIdentifier: HTTPClient] = [:]

    /// How many are cached.
    var count: Int { clients.count }

    /// The client under `key`, marked as just used.
    mutating func use(_ key: String) -> HTTPClient? {
        guard let client = clients[key] else { return nil }
        if let index = order.firstIndex(of: key) { order.remove(at: index) }
        order.append(key)
        return client
    }

    /// Adds `client`; returns the least recently used one it evicted to stay within `capacity`.
    mutating func insert(_ client: HTTPClient, for key: String, capacity: Int) -> HTTPClient? {
        var evicted: HTTPClient?
        if clients.count >= capacity, !order.isEmpty {
            evicted = clients.removeValue(forKey: order.removeFirst())
        }
        if let evicted { retiring[ObjectIdentifier(evicted)] = evicted }
        clients[key] = client
        order.append(key)
        return evicted
    }

    /// Takes `client` out of the retiring ones; nil when ``removeAll()`` took it already.
    mutating func retire(_ client: HTTPClient) -> HTTPClient? {
        retiring.removeValue(forKey: ObjectIdentifier(client))
    }

    /// Empties the cache; returns every client, cached or retiring.
    mutating func removeAll() -> [HTTPClient] {
        defer { clients.removeAll(); order.removeAll(); retiring.removeAll() }
        return Array(clients.values) + Array(retiring.values)
    }
}

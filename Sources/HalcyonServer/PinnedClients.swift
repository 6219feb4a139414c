import AsyncHTTPClient

/// The gate's pinned clients, least recently used first; how many downloads use each; and the evicted ones still
/// in use, which are shut down when their last download ends (or after a grace period, whichever comes first).
struct PinnedClients {
    /// What became of the client an insert evicted.
    enum Eviction {
        /// No download uses it: shut it down now.
        case idle(HTTPClient)
        /// Downloads still use it: it waits in the retiring ones for the last to end.
        case busy(HTTPClient)
    }

    private var clients: [String: HTTPClient] = [:]
    private var order: [String] = []
    private var retiring: [ObjectIdentifier: HTTPClient] = [:]
    private var leases: [ObjectIdentifier: Int] = [:]

    /// How many are cached.
    var count: Int { clients.count }

    /// How many evicted clients downloads still use.
    var retiringCount: Int { retiring.count }

    /// How many downloads use a client now, cached or retiring.
    var leaseCount: Int { leases.values.reduce(0, +) }

    /// The client under `key`, marked as just used and leased to one more download.
    mutating func use(_ key: String) -> HTTPClient? {
        guard let client = clients[key] else { return nil }
        if let index = order.firstIndex(of: key) { order.remove(at: index) }
        order.append(key)
        leases[ObjectIdentifier(client), default: 0] += 1
        return client
    }

    /// Adds `client`, leased to one download; evicts the least recently used one to stay within `capacity`.
    mutating func insert(_ client: HTTPClient, for key: String, capacity: Int) -> Eviction? {
        var eviction: Eviction?
        if clients.count >= capacity, !order.isEmpty, let evicted = clients.removeValue(forKey: order.removeFirst()) {
            if leases[ObjectIdentifier(evicted)] == nil {
                eviction = .idle(evicted)
            } else {
                retiring[ObjectIdentifier(evicted)] = evicted
                eviction = .busy(evicted)
            }
        }
        clients[key] = client
        order.append(key)
        leases[ObjectIdentifier(client), default: 0] += 1
        return eviction
    }

    /// Ends one download's lease of `client`; returns the client when it was retiring and that was its last lease.
    mutating func endLease(_ client: HTTPClient) -> HTTPClient? {
        let id = ObjectIdentifier(client)
        guard let held = leases[id] else { return nil }
        guard held <= 1 else {
            leases[id] = held - 1
            return nil
        }
        leases[id] = nil
        return retiring.removeValue(forKey: id)
    }

    /// Takes `client` out of the retiring ones when its grace period is over; nil when it is gone already.
    mutating func retire(_ client: HTTPClient) -> HTTPClient? {
        retiring.removeValue(forKey: ObjectIdentifier(client))
    }

    /// Empties the cache; returns every client, cached or retiring.
    mutating func removeAll() -> [HTTPClient] {
        defer { clients.removeAll(); order.removeAll(); retiring.removeAll(); leases.removeAll() }
        return Array(clients.values) + Array(retiring.values)
    }
}

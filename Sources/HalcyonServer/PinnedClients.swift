import AsyncHTTPClient
import Halcyon

/// The gate's pinned clients, least recently used first; how many downloads use each; and the evicted ones still
/// in use, each shut down when its last download ends, or by its backstop task after a grace period.
struct PinnedClients {
    /// What became of the client an insert evicted.
    enum Eviction {
        /// No download uses it: shut it down now.
        case idle(HTTPClient)
        /// Downloads still use it: it waits in the retiring ones for the last to end.
        case busy(HTTPClient)
    }

    /// An evicted client still in use, and the task that shuts it down after the grace period.
    struct Retiring {
        let client: HTTPClient
        var backstop: Task<Void, Never>?
    }

    private var clients = LRUList<String, HTTPClient>()
    private var retiring: [ObjectIdentifier: Retiring] = [:]
    private var leases: [ObjectIdentifier: Int] = [:]

    /// How many are cached.
    var count: Int { clients.count }

    /// How many evicted clients downloads still use.
    var retiringCount: Int { retiring.count }

    /// How many downloads use a client now, cached or retiring.
    var leaseCount: Int { leases.values.reduce(0, +) }

    /// The client under `key`, marked as just used and leased to one more download.
    mutating func use(_ key: String) -> HTTPClient? {
        guard let slot = clients.slot(for: key), let client = clients.value(at: slot) else { return nil }
        clients.touch(slot)
        leases[ObjectIdentifier(client), default: 0] += 1
        return client
    }

    /// Adds `client`, leased to one download; evicts the least recently used one to stay within `capacity`.
    mutating func insert(_ client: HTTPClient, for key: String, capacity: Int) -> Eviction? {
        var eviction: Eviction?
        if clients.count >= capacity, let evicted = clients.removeOldest() {
            if leases[ObjectIdentifier(evicted)] == nil {
                eviction = .idle(evicted)
            } else {
                retiring[ObjectIdentifier(evicted)] = Retiring(client: evicted)
                eviction = .busy(evicted)
            }
        }
        _ = clients.insert(client, for: key, cost: 0)
        leases[ObjectIdentifier(client), default: 0] += 1
        return eviction
    }

    /// Keeps `backstop` with the retiring `client`; false when it retired already (the caller cancels the task).
    mutating func setBackstop(_ backstop: Task<Void, Never>, for client: HTTPClient) -> Bool {
        guard retiring[ObjectIdentifier(client)] != nil else { return false }
        retiring[ObjectIdentifier(client)]?.backstop = backstop
        return true
    }

    /// Ends one download's lease of `client`; returns it, with its backstop to cancel, when it was retiring and
    /// that was its last lease.
    mutating func endLease(_ client: HTTPClient) -> Retiring? {
        let id = ObjectIdentifier(client)
        guard let held = leases[id] else { return nil }
        guard held <= 1 else {
            leases[id] = held - 1
            return nil
        }
        leases[id] = nil
        return retiring.removeValue(forKey: id)
    }

    /// Takes `client` out of the retiring ones when its grace period is over, leases and all; nil when it is gone.
    mutating func retire(_ client: HTTPClient) -> HTTPClient? {
        guard let entry = retiring.removeValue(forKey: ObjectIdentifier(client)) else { return nil }
        leases[ObjectIdentifier(client)] = nil
        return entry.client
    }

    /// Empties the cache; returns every client, cached or retiring, and the backstops to cancel.
    mutating func removeAll() -> (clients: [HTTPClient], backstops: [Task<Void, Never>]) {
        let cached = clients.removeAll { _ in true }
        defer { retiring.removeAll(); leases.removeAll() }
        return (cached + retiring.values.map(\.client), retiring.values.compactMap(\.backstop))
    }
}

import Halcyon

/// The output format each `Accept` header negotiates, remembered.
///
/// Browsers send the same few headers on every request, and parsing one (and
/// asking libvips which savers it has) costs more than the response-cache hit
/// it keys. Headers of at most 512 bytes are remembered, 64 at the most; when
/// the table is full it is emptied, so a client that varies its header costs
/// one parse per request, as without the table. One lock.
final class NegotiatedFormats: Sendable {
    /// The longest header remembered, and how many are.
    static let (longestHeader, capacity) = (512, 64)

    private let policy: OutputEncodingPolicy
    private let table = Locked<[String: ImageFormat?]>([:])

    /// Remembers what `policy` negotiates.
    init(policy: OutputEncodingPolicy) {
        self.policy = policy
    }

    /// What `header` negotiates (``OutputEncodingPolicy/negotiatedFormat(accepting:isAvailable:)``); nil without one.
    func format(accepting header: String?) -> ImageFormat? {
        guard let header else { return nil }
        guard header.utf8.count <= Self.longestHeader else { return policy.negotiatedFormat(accepting: header) }
        if let known = table.withLock({ $0[header] }) { return known }
        let format = policy.negotiatedFormat(accepting: header)
        table.withLock { table in
            if table.count >= Self.capacity { table.removeAll(keepingCapacity: true) }
            table[header] = format
        }
        return format
    }

    /// How many headers are remembered (for tests).
    var count: Int { table.withLock { $0.count } }
}

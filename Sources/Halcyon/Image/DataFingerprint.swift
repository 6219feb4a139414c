import Foundation

/// A cheap identity of a byte buffer, good within one process.
///
/// A decoded image remembers the fingerprint of the bytes it came from, so a
/// serializer can tell whether "the original data" it is handed really is the
/// source of that image before it stores those bytes instead of re-encoding.
struct DataFingerprint: Sendable, Hashable {
    let count: Int
    let digest: Int

    init(_ data: Data) {
        var hasher = Hasher()
        data.withUnsafeBytes { hasher.combine(bytes: $0) }
        count = data.count
        digest = hasher.finalize()
    }

    /// Whether `data` has this fingerprint; hashes it only when the length matches.
    func identifies(_ data: Data) -> Bool {
        count == data.count && self == DataFingerprint(data)
    }
}

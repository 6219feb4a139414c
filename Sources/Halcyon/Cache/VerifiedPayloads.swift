
/// Remembers which entry files this process has already checksummed, so hits skip re-hashing unchanged files.
///
/// A file is identified by device, inode, size, inode change time and the
/// payload hash its header claims. Any write to the file, or its replacement,
/// changes one of these (the change time moves on every write, the inode on
/// every atomic replace), so the next read hashes the payload again. The one
/// gap is a same-size in-place overwrite within the same timestamp tick (a few
/// milliseconds on Linux) as the previous change; `DiskStorage.Config.verifiesPayloadOnEveryRead`
/// closes it at the cost of hashing every hit. Bounded: forgets everything
/// past `capacity` entries. One lock guards the set.
final class VerifiedPayloads: Sendable {
    struct Identity: Hashable {
        var device: UInt64
        var inode: UInt64
        var size: Int
        var changeSeconds: Int
        var changeNanoseconds: Int
        var payloadHash: UInt64

        init(_ status: DiskFile.Status, payloadHash: UInt64) {
            device = status.device
            inode = status.inode
            size = status.size
            changeSeconds = status.changeTime.seconds
            changeNanoseconds = status.changeTime.nanoseconds
            self.payloadHash = payloadHash
        }
    }

    private let capacity: Int
    private let identities = Locked<Set<Identity>>([])

    init(capacity: Int = 4_096) {
        self.capacity = capacity
    }

    /// Whether this exact file version was verified before.
    func contains(_ identity: Identity) -> Bool {
        identities.withLock { $0.contains(identity) }
    }

    /// Records a verified file version.
    func insert(_ identity: Identity) {
        identities.withLock { set in
            if set.count >= capacity { set.removeAll(keepingCapacity: true) }
            set.insert(identity)
        }
    }
}

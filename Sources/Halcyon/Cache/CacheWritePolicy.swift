import Foundation

/// How a result is written to an ``ImageCache``: one value instead of a list of parameters.
///
/// Two policies are equal when they store the same bytes with the same
/// lifetimes, so the retrieve pipeline can put the policy in its keys:
/// callers that would store differently never share a load. The serializer
/// is compared by ``CacheSerializer/pipelineIdentity``.
public struct CacheWritePolicy: Sendable, Hashable {
    /// Turns the image into the bytes stored on disk.
    public var serializer: any CacheSerializer {
        didSet { serializerIdentity = serializer.pipelineIdentity }
    }
    /// ``CacheSerializer/pipelineIdentity`` of ``serializer``, computed once.
    private var serializerIdentity: String
    /// Whether the result goes to disk too (false: memory only). Default true.
    public var toDisk: Bool
    /// Also keep the source bytes on disk under the unprocessed key, for later processing. Default false.
    public var storesOriginal: Bool
    /// The memory entry's lifetime; nil uses the memory storage's.
    public var memoryExpiration: StorageExpiration?
    /// The disk entry's lifetime; nil uses the disk storage's.
    public var diskExpiration: StorageExpiration?
    /// An extension forced onto the disk file's name.
    public var forcedExtension: String?
    /// Whether disk writes are fsynced before the rename; nil uses the disk storage's setting.
    public var syncsWrites: Bool?
    /// Whether the retrieve waits for the disk write before it returns. Default false.
    public var waitsForDisk: Bool

    /// Makes a policy; every argument has the documented default.
    public init(
        serializer: any CacheSerializer = DefaultCacheSerializer.default,
        toDisk: Bool = true,
        storesOriginal: Bool = false,
        memoryExpiration: StorageExpiration? = nil,
        diskExpiration: StorageExpiration? = nil,
        forcedExtension: String? = nil,
        syncsWrites: Bool? = nil,
        waitsForDisk: Bool = false
    ) {
        self.serializer = serializer
        self.serializerIdentity = serializer.pipelineIdentity
        self.toDisk = toDisk
        self.storesOriginal = storesOriginal
        self.memoryExpiration = memoryExpiration
        self.diskExpiration = diskExpiration
        self.forcedExtension = forcedExtension
        self.syncsWrites = syncsWrites
        self.waitsForDisk = waitsForDisk
    }

    /// The policy of a retrieve under `options` (an original is kept only with a processor and a disk write).
    public init(_ options: HalcyonParsedOptionsInfo) {
        let toDisk = !options.cacheMemoryOnly
        self.init(
            serializer: options.cacheSerializer, toDisk: toDisk,
            storesOriginal: toDisk && options.cacheOriginalImage && !options.processor.identifier.isEmpty,
            memoryExpiration: options.memoryCacheExpiration, diskExpiration: options.diskCacheExpiration,
            forcedExtension: options.forcedExtension,
            syncsWrites: options.diskStoreWriteOptions.contains(.syncsWrites) ? true : nil,
            waitsForDisk: options.waitForCache)
    }

    /// Whether two policies store the same bytes with the same lifetimes (serializers compared by identity).
    public static func == (lhs: CacheWritePolicy, rhs: CacheWritePolicy) -> Bool {
        lhs.serializerIdentity == rhs.serializerIdentity && lhs.toDisk == rhs.toDisk
            && lhs.storesOriginal == rhs.storesOriginal && lhs.memoryExpiration == rhs.memoryExpiration
            && lhs.diskExpiration == rhs.diskExpiration && lhs.forcedExtension == rhs.forcedExtension
            && lhs.syncsWrites == rhs.syncsWrites && lhs.waitsForDisk == rhs.waitsForDisk
    }

    /// Hashes what ``==(_:_:)`` compares.
    public func hash(into hasher: inout Hasher) {
        hasher.combine(serializerIdentity)
        hasher.combine(toDisk)
        hasher.combine(storesOriginal)
        hasher.combine(memoryExpiration)
        hasher.combine(diskExpiration)
        hasher.combine(forcedExtension)
        hasher.combine(syncsWrites)
        hasher.combine(waitsForDisk)
    }
}

extension CacheSerializer {
    /// A value type by its full description (type and stored settings), a class by its instance.
    public var pipelineIdentity: String { PipelineIdentity(self).description }
}

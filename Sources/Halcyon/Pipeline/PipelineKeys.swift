import Foundation

// The keys of the three stages. Each holds everything that changes its
// stage's result, so two requests share work only when they would get the
// same value; anything that only changes where or when the work runs stays out.

/// Where the bytes come from, and how they are asked for: the key of "fetch original data".
struct FetchDataKey: Hashable, Sendable {
    enum Origin: Hashable, Sendable {
        /// A network image, by its download URL.
        case network(URL)
        /// A provider, by its cache key.
        case provider(String)
    }

    let origin: Origin
    /// The loader that fetches network bytes, by instance.
    let loader: ObjectIdentifier
    /// `.retryFailed`: fetch even a blocked URL.
    let retryFailed: Bool
    /// The validators of a conditional request, when revalidating.
    let validators: CacheValidators?
    /// Set for a request that must not share its load: a progress block, a
    /// request modifier or a redirect handler belongs to one caller (its
    /// download still coalesces with equal requests inside ``ImageDownloader``).
    let exclusive: UInt64?
}

/// The bytes' decode: the key of "fetch original image".
struct FetchImageKey: Hashable, Sendable {
    let data: FetchDataKey
    /// The processor run on the bytes, and the frame choice (``ImageCache/processorIdentifier(for:)``).
    let processorIdentifier: String
    /// Scale, frames, preloading and the pixel and frame limits.
    let decoding: ImageDecodingOptions
    /// `.backgroundDecode`: frames decoded now, off the caller.
    let backgroundDecode: Bool
}

/// A whole retrieve attempt: the key of "load image".
struct LoadImageKey: Hashable, Sendable {
    /// The fetch and decode this load runs on a miss (with no validators: the load finds those itself).
    let image: FetchImageKey
    /// The source's cache key (after `cacheKeyFilter`).
    let cacheKey: String
    /// The cache results are read from and stored to, and the one originals are kept in.
    let targetCache: ObjectIdentifier
    let originalCache: ObjectIdentifier
    /// How results are stored.
    let writePolicy: CacheWritePolicy
    /// Which cache reads happen and what they extend.
    let reads: CacheReadPolicy
}

/// Which cache reads an attempt makes; part of ``LoadImageKey``.
struct CacheReadPolicy: Hashable, Sendable {
    /// `.forceRefresh`: no cache read at all.
    let skipsCache: Bool
    /// Not `.fromMemoryCacheOrRefresh`: disk entries count.
    let readsDisk: Bool
    /// `.onlyFromCache`: a miss fails instead of fetching.
    let onlyFromCache: Bool
    /// A network source: stale entries with validators are revalidated.
    let revalidates: Bool
    /// `.refreshCached`: every entry with validators is revalidated.
    let forcesRevalidation: Bool
    let memoryExtending: ExpirationExtending
    let diskExtending: ExpirationExtending
}

/// Tells instances apart in keys: a class by its instance, a value by its description.
enum PipelineIdentity: Hashable, Sendable {
    case object(ObjectIdentifier)
    case value(String)

    init(_ value: any Sendable) {
        if type(of: value) is AnyClass {
            self = .object(ObjectIdentifier(value as AnyObject))
        } else {
            self = .value(String(reflecting: value))
        }
    }

    /// The identity as text.
    var description: String {
        switch self {
        case .object(let id): return "object#" + String(UInt(bitPattern: id.hashValue), radix: 36)
        case .value(let text): return text
        }
    }
}

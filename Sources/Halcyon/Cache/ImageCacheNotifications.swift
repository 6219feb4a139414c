import Foundation

extension Notification.Name {
    /// Posted by ``ImageCache`` after expired or corrupt disk entries were removed
    /// (`cleanExpiredDiskCache`), on the cache's I/O queue, with the cache as object and the
    /// removed file names (the hashes) under ``HalcyonDiskCacheCleanedHashKey``. Not posted when nothing went.
    public static let HalcyonDidCleanDiskCache = Notification.Name("com.halcyon.HalcyonDidCleanDiskCache")
}

/// The `userInfo` key of ``Foundation/NSNotification/Name/HalcyonDidCleanDiskCache``: the removed file names, `[String]`.
public let HalcyonDiskCacheCleanedHashKey = "com.halcyon.HalcyonDiskCacheCleanedHashKey"

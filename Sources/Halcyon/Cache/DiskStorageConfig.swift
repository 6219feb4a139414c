import Foundation

extension DiskStorage {
    // MARK: - Config

    /// The settings of a ``DiskStorage/Backend``.
    public struct Config: Sendable {
        /// The name of the cache; the last component of its directory.
        public var name: String
        /// Largest total size in bytes before a trim to half; 0 means no limit. Default 0.
        ///
        /// Counts the disk space the entry files take (the blocks allocated for each, at least its length), so
        /// many small entries cannot use more disk than the limit says.
        public var sizeLimit: UInt
        /// Expiration of entries stored without one. Default 7 days.
        public var expiration: StorageExpiration
        /// Extension added to every file name, 1–20 ASCII letters or digits. Default none.
        public var pathExtension: String?
        /// Name files by the SHA-256 hex of the key rather than the escaped key. Default `true`.
        public var usesHashedFileName: Bool
        /// With hashed names, append the key's own extension (when 1–20 letters or digits). Default `false`.
        public var autoExtAfterHashedFileName: Bool
        /// The parent of the cache directory; `nil` means `$XDG_CACHE_HOME/halcyon`, else `~/.cache/halcyon`.
        public var directory: URL?
        /// `fsync` each entry and the directory after writing, for durability across power loss. Default `false`.
        public var syncsWrites: Bool
        /// Trim on a background task after a store passes `sizeLimit` (default), or synchronously in the store.
        public var trimsInBackground: Bool
        /// Reads update the last-access time and a sliding expiration at most this often, in seconds. Default 1.
        public var accessUpdateInterval: TimeInterval
        /// Hash the payload on every read, rather than once per unchanged file version per process. Default `false`.
        ///
        /// By default a file whose device, inode, size, change time and header
        /// are unchanged since this process last verified it is not re-hashed;
        /// see ``DiskStorage`` for the narrow case this misses.
        public var verifiesPayloadOnEveryRead: Bool
        /// The cache directory from the parent directory and the name (Kingfisher's `cachePathBlock`,
        /// `ImageCache`'s `diskCachePathClosure`); nil uses `parent/name`.
        public var cachePathBlock: (@Sendable (_ directory: URL, _ cacheName: String) -> URL)?

        /// Makes a config; see each property for its default.
        public init(
            name: String,
            sizeLimit: UInt = 0,
            expiration: StorageExpiration = .days(7),
            pathExtension: String? = nil,
            usesHashedFileName: Bool = true,
            autoExtAfterHashedFileName: Bool = false,
            directory: URL? = nil,
            syncsWrites: Bool = false,
            trimsInBackground: Bool = true,
            accessUpdateInterval: TimeInterval = 1,
            verifiesPayloadOnEveryRead: Bool = false
        ) {
            self.name = name
            self.sizeLimit = sizeLimit
            self.expiration = expiration
            self.pathExtension = pathExtension
            self.usesHashedFileName = usesHashedFileName
            self.autoExtAfterHashedFileName = autoExtAfterHashedFileName
            self.directory = directory
            self.syncsWrites = syncsWrites
            self.trimsInBackground = trimsInBackground
            self.accessUpdateInterval = accessUpdateInterval
            self.verifiesPayloadOnEveryRead = verifiesPayloadOnEveryRead
        }

        /// `$XDG_CACHE_HOME/halcyon` when that variable is an absolute path, else `~/.cache/halcyon`.
        public static func defaultParentDirectory() -> URL {
            let environment = ProcessInfo.processInfo.environment
            if let xdg = environment["XDG_CACHE_HOME"], xdg.hasPrefix("/") {
                return URL(fileURLWithPath: xdg, isDirectory: true).appendingPathComponent("halcyon", isDirectory: true)
            }
            let home = environment["HOME"].flatMap { $0.isEmpty ? nil : $0 } ?? NSHomeDirectory()
            return URL(fileURLWithPath: home, isDirectory: true)
                .appendingPathComponent(".cache", isDirectory: true)
                .appendingPathComponent("halcyon", isDirectory: true)
        }
    }
}

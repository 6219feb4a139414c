import Crypto
import Foundation

extension DiskStorage.Backend {
    // MARK: - File names

    /// The URL of the file that holds (or would hold) the entry for `key`.
    ///
    /// `extensionKey` is as in ``cacheFileName(forKey:forcedExtension:extensionKey:)``.
    public func cacheFileURL(forKey key: String, forcedExtension: String? = nil, extensionKey: String? = nil) -> URL {
        directoryURL.appendingPathComponent(
            cacheFileName(forKey: key, forcedExtension: forcedExtension, extensionKey: extensionKey), isDirectory: false)
    }

    /// The URL of the file that holds (or would hold) the entry for `key`; same as ``cacheFileURL(forKey:forcedExtension:extensionKey:)`` with no extension key.
    public func fileURL(forKey key: String, forcedExtension: String? = nil) -> URL {
        cacheFileURL(forKey: key, forcedExtension: forcedExtension)
    }

    /// The file name for `key`: the SHA-256 hex of the key, or the escaped key, plus an optional extension.
    ///
    /// The extension is `forcedExtension`, else `config.pathExtension`, else
    /// (with `autoExtAfterHashedFileName`) the extension of `extensionKey`
    /// (default `key`) when it is 1–20 ASCII letters or digits. ``ImageCache``
    /// passes the source key of a processed entry (`key@processor`) as
    /// `extensionKey`, so `photo.png` processed is named `<hash>.png` like the
    /// original, whatever the processor's identifier says. An invalid
    /// `forcedExtension` is ignored. Without hashing, bytes other than letters,
    /// digits, `-`, `_` and a non-leading `.` are percent-escaped; a key that
    /// would make a name longer than 200 bytes, or an empty key, is hashed anyway.
    public func cacheFileName(forKey key: String, forcedExtension: String? = nil, extensionKey: String? = nil) -> String {
        var base: String
        if !config.usesHashedFileName, let escaped = Self.escapedFileName(key) {
            base = escaped
        } else {
            base = Self.sha256Hex(key)
        }
        let forced = forcedExtension.flatMap { Self.isValidExtension($0) ? $0 : nil }
        if let ext = forced ?? config.pathExtension {
            base += "." + ext
        } else if config.usesHashedFileName, config.autoExtAfterHashedFileName, let ext = Self.keyExtension(extensionKey ?? key) {
            base += "." + ext
        }
        return base
    }

    static func isValidExtension<S: StringProtocol>(_ ext: S) -> Bool {
        (1...20).contains(ext.utf8.count) && ext.utf8.allSatisfy { byte in
            (byte >= 0x30 && byte <= 0x39) || (byte >= 0x41 && byte <= 0x5A) || (byte >= 0x61 && byte <= 0x7A)
        }
    }

    /// The extension of the last path component of `key`, ignoring any query or fragment, if valid.
    static func keyExtension(_ key: String) -> String? {
        let path = key.prefix { $0 != "?" && $0 != "#" }
        let last = path.split(separator: "/", omittingEmptySubsequences: false).last ?? path[...]
        guard let dot = last.lastIndex(of: "."), dot != last.startIndex else { return nil }
        let ext = last[last.index(after: dot)...]
        return isValidExtension(ext) ? String(ext) : nil
    }

    static func escapedFileName(_ key: String) -> String? {
        guard !key.isEmpty else { return nil }
        let hex = Array("0123456789ABCDEF".utf8)
        var bytes: [UInt8] = []
        for (offset, byte) in key.utf8.enumerated() {
            let plain = (byte >= 0x30 && byte <= 0x39) || (byte >= 0x41 && byte <= 0x5A) || (byte >= 0x61 && byte <= 0x7A)
                || byte == 0x2D || byte == 0x5F || (byte == 0x2E && offset > 0)
            if plain {
                bytes.append(byte)
            } else {
                bytes.append(contentsOf: [0x25, hex[Int(byte >> 4)], hex[Int(byte & 0x0F)]])
            }
            if bytes.count > 200 { return nil }
        }
        return String(decoding: bytes, as: UTF8.self)
    }

    static func sha256Hex(_ key: String) -> String {
        let digest = SHA256.hash(data: Array(key.utf8))
        let hex = Array("0123456789abcdef".utf8)
        var bytes: [UInt8] = []
        bytes.reserveCapacity(64)
        for byte in digest {
            bytes.append(hex[Int(byte >> 4)])
            bytes.append(hex[Int(byte & 0x0F)])
        }
        return String(decoding: bytes, as: UTF8.self)
    }
}

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
    /// (default `key`) by Kingfisher's rule (the text after the last `.` before the
    /// first `@`, when that is 1–20 ASCII letters or digits): `photo.png`
    /// processed (`photo.png@processor`) is named `<hash>.png` like the original,
    /// whatever the processor's identifier says. An invalid `forcedExtension` is
    /// ignored. Without hashing, the name is the key itself, `@` included, as in
    /// Kingfisher, except that bytes other than letters, digits, `-`, `_`, `@`
    /// and a non-leading `.` are percent-escaped (so a key is never a path); a
    /// key that would make a name longer than 200 bytes, or an empty key, is
    /// hashed anyway.
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

    /// Kingfisher's automatic extension: the text after the last `.` of the key's part before its first `@`
    /// (the processor separator), when that is 1–20 ASCII letters or digits.
    ///
    /// So a query (`image.jpg?v=2` gives `jpg?v=2`) or an `@` in the URL's path
    /// (`host.net/1@300.jpg` gives `net/1`) leaves no extension, and the name is the bare hash.
    static func keyExtension(_ key: String) -> String? {
        guard let first = key.split(separator: "@").first, let dot = first.lastIndex(of: ".") else { return nil }
        let ext = first[first.index(after: dot)...]
        return isValidExtension(ext) ? String(ext) : nil
    }

    static func escapedFileName(_ key: String) -> String? {
        guard !key.isEmpty else { return nil }
        let hex = Array("0123456789ABCDEF".utf8)
        var bytes: [UInt8] = []
        for (offset, byte) in key.utf8.enumerated() {
            let plain = (byte >= 0x30 && byte <= 0x39) || (byte >= 0x41 && byte <= 0x5A) || (byte >= 0x61 && byte <= 0x7A)
                || byte == 0x2D || byte == 0x5F || byte == 0x40 || (byte == 0x2E && offset > 0)
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

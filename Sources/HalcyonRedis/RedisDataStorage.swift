import Foundation
import Halcyon

/// A ``DataStorageTier`` in Redis, shared by every node of a fleet: a result
/// computed by one node is a hit for all.
///
/// Each value is one Redis string under `keyPrefix + key`: a small envelope
/// (magic, creation time, content type, ETag) then the bytes, written with
/// `SET … PX` in one command, so a reader never sees half a value. An entry
/// that does not parse reads as a miss and is deleted. Redis errors become
/// `.cacheError(.storageUnavailable(tier: "redis", …))`; a cancelled caller gets
/// `.requestError(.taskCancelled)`. The client's timeouts bound every call.
public final class RedisDataStorage: DataStorageTier {
    /// `redis`.
    public let name = "redis"
    /// The client the values go through.
    public let client: RedisClient
    /// Prepended to every key. Default `halcyon:r1:`.
    public let keyPrefix: String

    /// Makes the tier on `client`.
    public init(client: RedisClient, keyPrefix: String = "halcyon:r1:") {
        self.client = client
        self.keyPrefix = keyPrefix
    }

    /// The value under `key`, or nil when missing or unreadable (then deleted).
    public func value(forKey key: String) async throws(HalcyonError) -> StoredData? {
        let bytes: [UInt8]?
        do {
            bytes = try await client.get(keyPrefix + key)
        } catch {
            throw Self.halcyonError(error)
        }
        guard let bytes else { return nil }
        guard let value = StoredDataEnvelope.decode(bytes) else {
            _ = try? await client.delete([keyPrefix + key])
            return nil
        }
        return value
    }

    /// Stores `value` under `key` for `lifetime` (nil: no expiry).
    public func store(_ value: StoredData, forKey key: String, lifetime: Duration?) async throws(HalcyonError) {
        do {
            try await client.set(keyPrefix + key, value: StoredDataEnvelope.encode(value), expiresIn: lifetime)
        } catch {
            throw Self.halcyonError(error)
        }
    }

    /// Deletes the value under `key`.
    public func removeValue(forKey key: String) async throws(HalcyonError) {
        do {
            _ = try await client.delete([keyPrefix + key])
        } catch {
            throw Self.halcyonError(error)
        }
    }

    /// Whether Redis holds a value under `key`.
    public func containsValue(forKey key: String) async throws(HalcyonError) -> Bool {
        do {
            return try await client.exists(keyPrefix + key)
        } catch {
            throw Self.halcyonError(error)
        }
    }

    private static func halcyonError(_ error: RedisError) -> HalcyonError {
        if error == .cancelled { return .requestError(reason: .taskCancelled(task: nil, token: nil)) }
        return .cacheError(reason: .storageUnavailable(tier: "redis", message: "\(error)"))
    }
}

/// The byte layout of a ``StoredData`` in one Redis string:
/// `HCR1`, created (ms since 1970, Int64 big-endian), content type and ETag
/// (each a UInt16 big-endian length then UTF-8, length 0xFFFF meaning absent),
/// then the data.
enum StoredDataEnvelope {
    static let magic: [UInt8] = Array("HCR1".utf8)
    static let absent = UInt16.max

    /// The envelope of `value`.
    static func encode(_ value: StoredData) -> [UInt8] {
        var out = magic
        out.reserveCapacity(64 + value.data.count)
        let millis = Int64((value.created.timeIntervalSince1970 * 1000).rounded())
        withUnsafeBytes(of: millis.bigEndian) { out.append(contentsOf: $0) }
        for text in [value.contentType, value.etag] {
            let utf8 = text.map { Array($0.utf8.prefix(Int(absent) - 1)) }
            let length = utf8.map { UInt16($0.count) } ?? absent
            withUnsafeBytes(of: length.bigEndian) { out.append(contentsOf: $0) }
            if let utf8 { out.append(contentsOf: utf8) }
        }
        out.append(contentsOf: value.data)
        return out
    }

    /// The value in `bytes`, or nil when they are not an envelope.
    static func decode(_ bytes: [UInt8]) -> StoredData? {
        guard bytes.count >= 16, Array(bytes[0..<4]) == magic else { return nil }
        var millis: Int64 = 0
        for byte in bytes[4..<12] { millis = millis << 8 | Int64(byte) }
        var offset = 12
        var texts: [String?] = []
        for _ in 0..<2 {
            guard offset + 2 <= bytes.count else { return nil }
            let length = UInt16(bytes[offset]) << 8 | UInt16(bytes[offset + 1])
            offset += 2
            if length == absent {
                texts.append(nil)
                continue
            }
            guard offset + Int(length) <= bytes.count,
                  let text = String(validating: bytes[offset..<offset + Int(length)], as: UTF8.self) else { return nil }
            texts.append(text)
            offset += Int(length)
        }
        return StoredData(data: Data(bytes[offset...]), contentType: texts[0], etag: texts[1],
                          created: Date(timeIntervalSince1970: Double(millis) / 1000))
    }
}

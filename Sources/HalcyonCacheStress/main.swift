// A helper for the disk cache's multi-process tests: stores or reads entries
// in a given cache directory, so a test can kill it mid-write or run two at once.
//
//   halcyon-cache-stress store  <directory> <count> <writer>            store keys 0..<count
//   halcyon-cache-stress hammer <directory> <count> <rounds> <writer> [<access-update-interval>]
//                                                                       store and read the same keys repeatedly;
//                                                                       interval 0 re-dates the header on every hit
//
// Payloads are self-describing (key, writer, round, then bytes derived from
// them), so any reader can tell a valid payload from a torn or mixed one.
// Exit status 0 on success, 1 if a read returned a payload that is not valid,
// 2 on bad arguments or a failed store.
import Foundation
import Halcyon

/// The payload a writer stores for a key in a round: 24 bytes of identity, then derived filler.
func payload(key: Int, writer: Int, round: Int) -> Data {
    let size = 1_024 + (key * 7_919) % 60_000
    var bytes = [UInt8](repeating: 0, count: size)
    for (index, value) in [UInt64(key), UInt64(writer), UInt64(round)].enumerated() {
        withUnsafeBytes(of: value.littleEndian) { raw in
            for offset in 0..<8 { bytes[index * 8 + offset] = raw[offset] }
        }
    }
    var state = UInt64(key &* 31 &+ writer &* 17 &+ round) &* 0x9E37_79B9_7F4A_7C15 | 1
    for index in 24..<size {
        state = state &* 6_364_136_223_846_793_005 &+ 1_442_695_040_888_963_407
        bytes[index] = UInt8(truncatingIfNeeded: state >> 56)
    }
    return Data(bytes)
}

/// Whether `data` is exactly the payload its first 24 bytes claim to be, for `key`.
func isValid(_ data: Data, key: Int) -> Bool {
    guard data.count >= 24 else { return false }
    let fields = data.withUnsafeBytes { raw in
        (0..<3).map { Int(UInt64(littleEndian: raw.loadUnaligned(fromByteOffset: $0 * 8, as: UInt64.self))) }
    }
    guard fields[0] == key else { return false }
    return data == payload(key: key, writer: fields[1], round: fields[2])
}

func storage(at directory: String, accessUpdateInterval: TimeInterval = 1) -> DiskStorage.Backend? {
    let url = URL(fileURLWithPath: directory)
    let config = DiskStorage.Config(name: url.lastPathComponent, directory: url.deletingLastPathComponent(),
                                    accessUpdateInterval: accessUpdateInterval)
    return try? DiskStorage.Backend(config: config)
}

let arguments = CommandLine.arguments
let interval = arguments.count >= 7 ? TimeInterval(arguments[6]) ?? 1 : 1
guard arguments.count >= 5, let disk = storage(at: arguments[2], accessUpdateInterval: interval), let count = Int(arguments[3]) else {
    FileHandle.standardError.write(Data("usage: halcyon-cache-stress store|hammer <directory> <count> ...\n".utf8))
    exit(2)
}

switch arguments[1] {
case "store":
    guard let writer = Int(arguments[4]) else { exit(2) }
    for key in 0..<count {
        do {
            try disk.store(value: payload(key: key, writer: writer, round: 0), forKey: "key-\(key)")
        } catch {
            FileHandle.standardError.write(Data("store \(key) failed: \(error)\n".utf8))
            exit(2)
        }
    }
    print("stored \(count)")
case "hammer":
    guard arguments.count >= 6, let rounds = Int(arguments[4]), let writer = Int(arguments[5]) else { exit(2) }
    var hits = 0
    var bad = 0
    for round in 0..<rounds {
        for key in 0..<count {
            do {
                try disk.store(value: payload(key: key, writer: writer, round: round), forKey: "key-\(key)")
                let other = (key * 13 + round) % count
                if let data = try disk.value(forKey: "key-\(other)") {
                    hits += 1
                    if !isValid(data, key: other) { bad += 1 }
                }
            } catch {
                FileHandle.standardError.write(Data("hammer \(key) failed: \(error)\n".utf8))
                exit(2)
            }
        }
    }
    print("hits \(hits) bad \(bad)")
    exit(bad == 0 ? 0 : 1)
default:
    exit(2)
}

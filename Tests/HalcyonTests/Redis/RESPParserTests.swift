import NIOCore
@testable import HalcyonRedis
import Testing

@Suite("RESP2 parser")
struct RESPParserTests {
    private let parser = RESPParser(maxValueBytes: 1024)

    /// Every reply type, whole and split at every byte: the same value, the buffer consumed exactly.
    @Test("Each reply type parses whole and when split at any byte")
    func splitAnywhere() throws {
        let cases: [(String, RESPValue)] = [
            ("+OK\r\n", .simpleString("OK")),
            ("-ERR wrong\r\n", .error("ERR wrong")),
            (":-42\r\n", .integer(-42)),
            ("$5\r\nhe\r\no\r\n", .bulkString(Array("he\r\no".utf8))),
            ("$0\r\n\r\n", .bulkString([])),
            ("$-1\r\n", .bulkString(nil)),
            ("*-1\r\n", .array(nil)),
            ("*3\r\n:1\r\n$3\r\n$\r\n\r\n*1\r\n+x\r\n", .array([.integer(1), .bulkString(Array("$\r\n".utf8)), .array([.simpleString("x")])])),
        ]
        for (text, expected) in cases {
            let bytes = Array(text.utf8) + Array("+NEXT\r\n".utf8)
            for cut in 0...bytes.count {
                var buffer = ByteBuffer(bytes: bytes[..<cut])
                let early = try parser.next(from: &buffer)
                if cut < text.utf8.count {
                    #expect(early == nil, "\(text.debugDescription) cut at \(cut) parsed early")
                    #expect(buffer.readableBytes == cut, "an incomplete reply consumed bytes")
                    buffer.writeBytes(bytes[cut...])
                    #expect(try parser.next(from: &buffer) == expected)
                } else {
                    #expect(early == expected)
                    buffer.writeBytes(bytes[cut...])
                }
                #expect(try parser.next(from: &buffer) == .simpleString("NEXT"), "\(text.debugDescription) left the stream misaligned")
            }
        }
    }

    @Test("Oversized bulk lengths are refused from the header, before the bytes arrive")
    func oversized() {
        var buffer = ByteBuffer(string: "$1025\r\n")
        #expect(throws: RedisError.valueTooLarge(1025)) { try parser.next(from: &buffer) }
        var huge = ByteBuffer(string: "$99999999999999\r\n")
        #expect(throws: RedisError.self) { try parser.next(from: &huge) }
    }

    @Test("Garbage, bad lengths, bad terminators and deep nesting are protocol violations")
    func violations() {
        for text in ["?what\r\n", "$-5\r\n", ":12a\r\n", "$3\r\nabcXY", "+OK\rX", "*-2\r\n", String(repeating: "*1\r\n", count: 40) + ":1\r\n"] {
            var buffer = ByteBuffer(string: text)
            #expect(throws: RedisError.self, "\(text.debugDescription)") { try parser.next(from: &buffer) }
        }
        var endless = ByteBuffer(string: "+" + String(repeating: "a", count: RESPParser.maxLineLength + 10))
        #expect(throws: RedisError.self) { try parser.next(from: &endless) }
    }

    @Test("Commands encode as arrays of bulk strings, binary-safe")
    func encoder() throws {
        var buffer = ByteBuffer()
        RESPEncoder.encode([Array("SET".utf8), Array("k".utf8), [0, 13, 10, 255]], into: &buffer)
        #expect(buffer.readableBytesView.elementsEqual(Array("*3\r\n$3\r\nSET\r\n$1\r\nk\r\n$4\r\n".utf8) + [0, 13, 10, 255] + [13, 10]))
        // The server side of the same grammar reads it back.
        #expect(try RESPParser(maxValueBytes: 64).next(from: &buffer) == .array([
            .bulkString(Array("SET".utf8)), .bulkString(Array("k".utf8)), .bulkString([0, 13, 10, 255]),
        ]))
    }

    @Test("URLs: password, user and password, database, and what is refused")
    func urls() throws {
        let plain = try RedisConfiguration(url: "redis://127.0.0.1")
        #expect(plain.host == "127.0.0.1" && plain.port == 6379 && plain.database == 0 && plain.password == nil)
        let full = try RedisConfiguration(url: "redis://alice:s%40cret@cache.local:6380/3")
        #expect(full.username == "alice" && full.password == "s@cret" && full.port == 6380 && full.database == 3)
        let passwordOnly = try RedisConfiguration(url: "redis://:pw@h/0")
        #expect(passwordOnly.username == nil && passwordOnly.password == "pw")
        for bad in ["http://h", "redis://", "redis://h/x", "redis://h:0", "not a url at all"] {
            #expect(throws: RedisError.self, "\(bad)") { try RedisConfiguration(url: bad) }
        }
    }
}

import NIOCore

/// Reads RESP2 replies from bytes as they arrive.
///
/// ``next(from:)`` takes one whole reply off the front of the buffer, or
/// leaves the buffer as it was when the reply is not complete yet. A bulk
/// string's length is checked against the limit from its header, before its
/// bytes arrive, and a long bulk is not re-scanned while it arrives (only its
/// header is read again). Replies nest at most ``maxDepth`` arrays deep.
struct RESPParser: Sendable {
    /// Largest bulk string accepted.
    let maxValueBytes: Int
    /// Most array elements accepted in one reply.
    var maxElements = 1 << 20
    /// Deepest nesting of arrays accepted.
    var maxDepth = 32

    /// Longest simple string, error or number line accepted.
    static let maxLineLength = 64 * 1024

    init(maxValueBytes: Int) {
        self.maxValueBytes = maxValueBytes
    }

    /// One complete reply from the front of `buffer` (consumed), or nil when more bytes are needed.
    func next(from buffer: inout ByteBuffer) throws(RedisError) -> RESPValue? {
        var cursor = buffer
        guard let value = try parse(&cursor, depth: 0) else { return nil }
        buffer = cursor
        return value
    }

    private func parse(_ buffer: inout ByteBuffer, depth: Int) throws(RedisError) -> RESPValue? {
        guard let type = buffer.readInteger(as: UInt8.self) else { return nil }
        switch type {
        case UInt8(ascii: "+"):
            return try line(&buffer).map { .simpleString(String(decoding: $0, as: UTF8.self)) }
        case UInt8(ascii: "-"):
            return try line(&buffer).map { .error(String(decoding: $0, as: UTF8.self)) }
        case UInt8(ascii: ":"):
            guard let text = try line(&buffer) else { return nil }
            return .integer(try number(text))
        case UInt8(ascii: "$"):
            return try bulk(&buffer)
        case UInt8(ascii: "*"):
            return try array(&buffer, depth: depth)
        default:
            throw .protocolViolation("unknown reply type byte \(type)")
        }
    }

    private func bulk(_ buffer: inout ByteBuffer) throws(RedisError) -> RESPValue? {
        guard let text = try line(&buffer) else { return nil }
        let length = try number(text)
        if length == -1 { return .bulkString(nil) }
        guard length >= 0 else { throw .protocolViolation("negative bulk length \(length)") }
        guard length <= maxValueBytes else { throw .valueTooLarge(Int(clamping: length)) }
        let count = Int(length)
        guard buffer.readableBytes >= count + 2 else { return nil }
        guard let bytes = buffer.readBytes(length: count), let end = buffer.readBytes(length: 2) else { return nil }
        guard end == [13, 10] else { throw .protocolViolation("bulk string not followed by CRLF") }
        return .bulkString(bytes)
    }

    private func array(_ buffer: inout ByteBuffer, depth: Int) throws(RedisError) -> RESPValue? {
        guard depth < maxDepth else { throw .protocolViolation("arrays nested deeper than \(maxDepth)") }
        guard let text = try line(&buffer) else { return nil }
        let count = try number(text)
        if count == -1 { return .array(nil) }
        guard count >= 0, count <= maxElements else { throw .protocolViolation("array length \(count)") }
        var elements: [RESPValue] = []
        elements.reserveCapacity(Int(min(count, 1024)))
        for _ in 0..<count {
            guard let element = try parse(&buffer, depth: depth + 1) else { return nil }
            elements.append(element)
        }
        return .array(elements)
    }

    /// The bytes up to CRLF (consumed with it), nil when no CRLF has arrived.
    private func line(_ buffer: inout ByteBuffer) throws(RedisError) -> [UInt8]? {
        let view = buffer.readableBytesView
        guard let cr = view.firstIndex(of: 13) else {
            if view.count > Self.maxLineLength { throw .protocolViolation("line longer than \(Self.maxLineLength) bytes") }
            return nil
        }
        let length = cr - view.startIndex
        guard length <= Self.maxLineLength else { throw .protocolViolation("line longer than \(Self.maxLineLength) bytes") }
        guard buffer.readableBytes >= length + 2 else { return nil }
        guard let bytes = buffer.readBytes(length: length), let end = buffer.readBytes(length: 2) else { return nil }
        guard end[1] == 10 else { throw .protocolViolation("CR not followed by LF") }
        return bytes
    }

    private func number(_ text: [UInt8]) throws(RedisError) -> Int64 {
        guard let value = Int64(String(decoding: text, as: UTF8.self)) else {
            throw .protocolViolation("not a number: \(String(decoding: text.prefix(32), as: UTF8.self))")
        }
        return value
    }
}

/// Turns a command into RESP2: an array of bulk strings.
enum RESPEncoder {
    /// Appends `arguments` as one command to `buffer`.
    static func encode(_ arguments: [[UInt8]], into buffer: inout ByteBuffer) {
        buffer.writeString("*\(arguments.count)\r\n")
        for argument in arguments {
            buffer.writeString("$\(argument.count)\r\n")
            buffer.writeBytes(argument)
            buffer.writeString("\r\n")
        }
    }
}

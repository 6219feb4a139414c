/// One reply of the Redis serialization protocol, version 2 (RESP2).
public enum RESPValue: Sendable, Equatable {
    /// `+OK`: a short status text.
    case simpleString(String)
    /// `-ERR …`: an error reply; the command failed, the connection is fine.
    case error(String)
    /// `:42`.
    case integer(Int64)
    /// `$n` then n bytes, binary-safe; nil for the null bulk string (`$-1`, a missing key).
    case bulkString([UInt8]?)
    /// `*n` then n values; nil for the null array (`*-1`).
    case array([RESPValue]?)
}

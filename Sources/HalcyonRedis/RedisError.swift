/// Why a Redis call failed.
public enum RedisError: Error, Sendable, Equatable, CustomStringConvertible {
    /// The URL is not `redis://[[user]:password@]host[:port][/db]`.
    case invalidURL(String)
    /// No connection: refused, dropped, or waiting out the reconnect backoff.
    case connectionFailed(String)
    /// The server did not answer within the command or connect timeout (the connection is closed).
    case timeout
    /// AUTH was refused, or the server wants a password that was not given.
    case authenticationFailed(String)
    /// The server answered with an error reply.
    case server(String)
    /// The bytes from the server are not valid RESP2.
    case protocolViolation(String)
    /// A bulk string longer than the configured maximum.
    case valueTooLarge(Int)
    /// The client was shut down.
    case shutDown
    /// The calling task was cancelled.
    case cancelled

    /// A one-line description.
    public var description: String {
        switch self {
        case .invalidURL(let text): return "invalid redis URL: \(text)"
        case .connectionFailed(let text): return "connection failed: \(text)"
        case .timeout: return "timed out"
        case .authenticationFailed(let text): return "authentication failed: \(text)"
        case .server(let text): return "server error: \(text)"
        case .protocolViolation(let text): return "protocol violation: \(text)"
        case .valueTooLarge(let length): return "value of \(length) bytes is over the limit"
        case .shutDown: return "client shut down"
        case .cancelled: return "cancelled"
        }
    }
}

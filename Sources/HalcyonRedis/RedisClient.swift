import Halcyon
import NIOCore
import NIOPosix

/// A small Redis client: RESP2 over SwiftNIO, a pool of pipelined connections.
///
/// Every call is async and bounded: by the connect timeout while a connection
/// is opened, and by the command timeout while a reply is awaited. A dropped
/// connection fails the commands waiting on it with `.connectionFailed`; the
/// next call reconnects, after the backoff when connects keep failing (calls
/// in between fail at once instead of waiting). A cancelled caller gets
/// `.cancelled` promptly. AUTH and SELECT run on every new connection; an
/// error reply becomes `.server`, or `.authenticationFailed` for NOAUTH and
/// WRONGPASS. Values are binary-safe byte arrays. Thread-safe.
public final class RedisClient: Sendable {
    /// The settings.
    public let configuration: RedisConfiguration
    private let pool: RedisConnectionPool

    /// Makes a client; nothing connects until the first call.
    public init(configuration: RedisConfiguration, eventLoopGroup: any EventLoopGroup = MultiThreadedEventLoopGroup.singleton) {
        self.configuration = configuration
        pool = RedisConnectionPool(configuration: configuration, group: eventLoopGroup)
    }

    /// Sends one command (its name and arguments as bytes) and returns the reply; error replies throw `.server`.
    public func send(_ arguments: [[UInt8]]) async throws(RedisError) -> RESPValue {
        guard !Task.isCancelled else { throw .cancelled }
        let connection = try await pool.connection()
        switch await connection.send(arguments, timeout: configuration.commandTimeout) {
        case .success(.error(let message)):
            if message.hasPrefix("NOAUTH") || message.hasPrefix("WRONGPASS") { throw .authenticationFailed(message) }
            throw .server(message)
        case .success(let value):
            return value
        case .failure(let error):
            throw error
        }
    }

    /// `PING`; throws when the server does not answer PONG.
    public func ping() async throws(RedisError) {
        let reply = try await send([Array("PING".utf8)])
        guard reply == .simpleString("PONG") else { throw .protocolViolation("PING answered \(reply)") }
    }

    /// `GET key`: the value, or nil when the key does not exist.
    public func get(_ key: String) async throws(RedisError) -> [UInt8]? {
        switch try await send([Array("GET".utf8), Array(key.utf8)]) {
        case .bulkString(let bytes): return bytes
        case let other: throw .protocolViolation("GET answered \(other)")
        }
    }

    /// `SET key value [PX ms]`: stores `value`, expiring after `expiresIn` (at least 1 ms) when given.
    public func set(_ key: String, value: [UInt8], expiresIn: Duration? = nil) async throws(RedisError) {
        var arguments = [Array("SET".utf8), Array(key.utf8), value]
        if let expiresIn {
            let milliseconds = max(1, RedisConnection.nanoseconds(expiresIn) / 1_000_000)
            arguments += [Array("PX".utf8), Array(String(milliseconds).utf8)]
        }
        let reply = try await send(arguments)
        guard reply == .simpleString("OK") else { throw .protocolViolation("SET answered \(reply)") }
    }

    /// `DEL key…`: how many of `keys` existed.
    @discardableResult
    public func delete(_ keys: [String]) async throws(RedisError) -> Int {
        guard !keys.isEmpty else { return 0 }
        guard case .integer(let count) = try await send([Array("DEL".utf8)] + keys.map { Array($0.utf8) }) else {
            throw .protocolViolation("DEL did not answer a number")
        }
        return Int(count)
    }

    /// `EXISTS key`.
    public func exists(_ key: String) async throws(RedisError) -> Bool {
        guard case .integer(let count) = try await send([Array("EXISTS".utf8), Array(key.utf8)]) else {
            throw .protocolViolation("EXISTS did not answer a number")
        }
        return count > 0
    }

    /// Closes every connection; later calls fail with `.shutDown`.
    public func shutdown() async {
        await pool.shutdown()
    }
}

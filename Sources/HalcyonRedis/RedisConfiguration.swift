import Foundation

/// Where a ``RedisClient`` connects and how patient it is.
public struct RedisConfiguration: Sendable, Equatable {
    /// Host name or address.
    public var host: String
    /// TCP port. Default 6379.
    public var port: Int
    /// ACL user for `AUTH user password`; nil uses `AUTH password`.
    public var username: String?
    /// Password; nil sends no AUTH.
    public var password: String?
    /// Database selected on every connection. Default 0.
    public var database: Int
    /// Most connections the pool opens. Default 4.
    public var poolSize = 4
    /// Longest time to connect (and authenticate). Default 1 s.
    public var connectTimeout: Duration = .seconds(1)
    /// Longest time a command waits for its reply; then `.timeout` and the connection is replaced. Default 1 s.
    public var commandTimeout: Duration = .seconds(1)
    /// First wait after a failed connect; doubles on each failure up to ``maximumBackoff``. Default 100 ms.
    public var initialBackoff: Duration = .milliseconds(100)
    /// Longest wait between connect attempts. Default 5 s.
    public var maximumBackoff: Duration = .seconds(5)
    /// Largest bulk string accepted from the server. Default 512 MiB, Redis' `proto-max-bulk-len`.
    public var maxValueBytes = 512 * 1024 * 1024

    /// Makes settings for `host:port`.
    public init(host: String, port: Int = 6379, username: String? = nil, password: String? = nil, database: Int = 0) {
        self.host = host
        self.port = port
        self.username = username
        self.password = password
        self.database = database
    }

    /// Parses `redis://[[user]:password@]host[:port][/db]`; throws `.invalidURL` naming the problem.
    public init(url text: String) throws(RedisError) {
        guard let parts = URLComponents(string: text) else { throw .invalidURL("not a URL") }
        guard parts.scheme?.lowercased() == "redis" else { throw .invalidURL("the scheme must be redis://") }
        guard let host = parts.host, !host.isEmpty else { throw .invalidURL("no host") }
        let port = parts.port ?? 6379
        guard (1...65535).contains(port) else { throw .invalidURL("port \(port) is out of range") }
        var database = 0
        let path = parts.path.trimmingCharacters(in: CharacterSet(charactersIn: "/"))
        if !path.isEmpty {
            guard let number = Int(path), number >= 0 else { throw .invalidURL("the database must be a number") }
            database = number
        }
        let user = parts.user.flatMap { $0.isEmpty ? nil : $0.removingPercentEncoding ?? $0 }
        let password = parts.password.map { $0.removingPercentEncoding ?? $0 }
        self.init(host: host, port: port, username: user, password: password, database: database)
    }
}

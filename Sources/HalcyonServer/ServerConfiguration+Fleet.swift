import Foundation
import HalcyonRedis

// MARK: - Fleet settings: shared result storage and HTTP caching

extension ServerConfiguration {
    /// Checks the shared-storage and caching settings; an error names the bad one.
    func validateFleetSettings() throws(ConfigurationError) {
        guard redisTTL >= 0, negativeCacheTTL >= 0, cacheMaxAge >= 0 else {
            throw ConfigurationError(message: "cache lifetimes (redis TTL, negative cache TTL, cache max-age) must not be negative")
        }
        guard redisTimeout > 0, redisTimeout <= 60 else {
            throw ConfigurationError(message: "the redis timeout must be above 0 and at most 60 seconds")
        }
        _ = try redisConfiguration()
    }

    /// The Redis client settings from ``redisURL`` and ``redisTimeout``, or nil when no URL is set.
    func redisConfiguration() throws(ConfigurationError) -> RedisConfiguration? {
        guard let redisURL else { return nil }
        do {
            var configuration = try RedisConfiguration(url: redisURL)
            let timeout = Duration.milliseconds(Int64(redisTimeout * 1000))
            configuration.commandTimeout = timeout
            configuration.connectTimeout = timeout
            return configuration
        } catch {
            throw ConfigurationError(message: "the redis URL \(Self.redactingPassword(redisURL)) is invalid: \(error)")
        }
    }

    /// The `Cache-Control` of a successful image response: `public`, the max-age, and `immutable` when configured and signed.
    var successCacheControl: String {
        "public, max-age=\(cacheMaxAge)" + (cacheImmutable && isSigned ? ", immutable" : "")
    }

    /// `url` with any password replaced by `<redacted>`, for logs and `--print-config`.
    static func redactingPassword(_ url: String) -> String {
        guard var parts = URLComponents(string: url), parts.password != nil else { return url }
        parts.password = "redacted"
        return parts.string ?? "<redacted>"
    }
}

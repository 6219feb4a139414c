import Foundation

/// Whether the machine has a network, and a wait for it to come back (for ``NetworkRetryStrategy``).
public protocol NetworkMonitoring: Sendable {
    /// Whether a network is up now.
    var isConnected: Bool { get }
    /// Waits until a network is up, at most `timeout` seconds; true when it is. Stops early when cancelled.
    func waitForConnection(timeout: TimeInterval) async -> Bool
}

/// Kingfisher's `NetworkRetryStrategy`: a failure to reach the server is retried once the network is back.
///
/// Only connection-level failures are retried (cannot connect, a transport
/// error after connecting, a timeout); an HTTP status, a bad request or a
/// corrupt image stops at once. When the network is up the retry is
/// immediate (once per failure, up to ``maxRetryCount``); when it is down,
/// the strategy waits up to ``timeoutInterval`` for it to return, then stops.
/// A cancelled task stops the wait.
public struct NetworkRetryStrategy: RetryStrategy {
    /// The longest wait for the network to return, in seconds. Default 30.
    public let timeoutInterval: TimeInterval
    /// The most retries. Default 3.
    public let maxRetryCount: Int
    /// Tells whether the network is up; default ``InterfaceNetworkMonitor``.
    public let monitor: any NetworkMonitoring

    /// Makes the strategy; see each property for its default.
    public init(timeoutInterval: TimeInterval = 30, maxRetryCount: Int = 3, monitor: any NetworkMonitoring = InterfaceNetworkMonitor()) {
        self.timeoutInterval = timeoutInterval
        self.maxRetryCount = maxRetryCount
        self.monitor = monitor
    }

    public func retry(context: RetryContext) async -> RetryDecision {
        guard context.retriedCount < maxRetryCount, Self.isConnectivityFailure(context.error) else { return .stop }
        if monitor.isConnected { return .retry(userInfo: nil) }
        let back = await monitor.waitForConnection(timeout: timeoutInterval)
        return back && !Task.isCancelled ? .retry(userInfo: nil) : .stop
    }

    /// Whether `error` says the server could not be reached, rather than that it answered badly.
    public static func isConnectivityFailure(_ error: HalcyonError) -> Bool {
        switch error {
        case .requestError(reason: .cannotConnect): return true
        case .responseError(reason: .networkError), .responseError(reason: .timedOut): return true
        default: return false
        }
    }
}

/// The default ``NetworkMonitoring`` on Linux: a network is up when an interface other than loopback is up
/// and running with an IPv4 or IPv6 address (`getifaddrs`), polled every half second while waiting.
public struct InterfaceNetworkMonitor: NetworkMonitoring {
    /// Makes the monitor.
    public init() {}

    public var isConnected: Bool {
        var list: UnsafeMutablePointer<ifaddrs>?
        guard getifaddrs(&list) == 0, let first = list else { return false }
        defer { freeifaddrs(list) }
        var cursor: UnsafeMutablePointer<ifaddrs>? = first
        while let entry = cursor {
            let flags = Int32(entry.pointee.ifa_flags)
            let family = entry.pointee.ifa_addr?.pointee.sa_family
            let up = flags & Int32(IFF_UP) != 0 && flags & Int32(IFF_RUNNING) != 0 && flags & Int32(IFF_LOOPBACK) == 0
            if up, family == sa_family_t(AF_INET) || family == sa_family_t(AF_INET6) { return true }
            cursor = entry.pointee.ifa_next
        }
        return false
    }

    public func waitForConnection(timeout: TimeInterval) async -> Bool {
        let deadline = ContinuousClock.now + .milliseconds(Int64(max(0, timeout) * 1000))
        while !isConnected {
            guard ContinuousClock.now < deadline, (try? await Task.sleep(for: .milliseconds(500))) != nil else { return false }
        }
        return true
    }
}

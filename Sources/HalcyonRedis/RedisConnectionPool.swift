import Halcyon
import NIOCore

/// Up to ``RedisConfiguration/poolSize`` connections, opened when needed, one
/// connect at a time, with a backoff after failures.
///
/// A command takes an idle connection, else opens one more while the pool is
/// not full (using the least busy one meanwhile), else shares the least busy
/// one (pipelining). When no connection is open and the last connect failed,
/// callers fail at once with `.connectionFailed` until the backoff (100 ms
/// doubling to 5 s by default) has passed; the next caller after it tries
/// again. Closed connections leave the pool by themselves. One lock.
final class RedisConnectionPool: Sendable {
    private struct State {
        var connections: [RedisConnection] = []
        var connecting: Task<Result<RedisConnection, RedisError>, Never>?
        var failures = 0
        var retryAt: ContinuousClock.Instant?
        var lastError: RedisError?
        var isShutDown = false
    }

    private enum Choice {
        case use(RedisConnection)
        case wait(Task<Result<RedisConnection, RedisError>, Never>)
        case fail(RedisError)
    }

    private let configuration: RedisConfiguration
    private let group: any EventLoopGroup
    private let state = Locked(State())

    init(configuration: RedisConfiguration, group: any EventLoopGroup) {
        self.configuration = configuration
        self.group = group
    }

    /// A connection to send one command on.
    func connection() async throws(RedisError) -> RedisConnection {
        switch choose() {
        case .use(let connection): return connection
        case .fail(let error): throw error
        case .wait(let task): return try await task.value.get()
        }
    }

    /// Closes every connection; later calls fail with `.shutDown`.
    func shutdown() async {
        let (connections, connecting) = state.withLock { state in
            state.isShutDown = true
            defer { state.connections = [] }
            return (state.connections, state.connecting)
        }
        for connection in connections { connection.close() }
        if case .success(let late) = await connecting?.value { late.close() }
    }

    private func choose() -> Choice {
        let now = ContinuousClock.now
        return state.withLock { state -> Choice in
            guard !state.isShutDown else { return .fail(.shutDown) }
            state.connections.removeAll { !$0.isActive }
            let leastBusy = state.connections.min { $0.inFlight < $1.inFlight }
            if let leastBusy, leastBusy.inFlight == 0 { return .use(leastBusy) }
            if state.connections.count < configuration.poolSize, state.connecting == nil {
                if let retryAt = state.retryAt, now < retryAt {
                    if let leastBusy { return .use(leastBusy) }
                    return .fail(.connectionFailed("reconnecting after \(state.lastError.map { "\($0)" } ?? "a failure")"))
                }
                state.connecting = startConnect()
            }
            if let leastBusy { return .use(leastBusy) }
            guard let connecting = state.connecting else { return .fail(.connectionFailed("no connection")) }
            return .wait(connecting)
        }
    }

    /// Starts one connect; called with the lock held.
    private func startConnect() -> Task<Result<RedisConnection, RedisError>, Never> {
        Task { [configuration, group] in
            let result: Result<RedisConnection, RedisError>
            do throws(RedisError) {
                result = .success(try await RedisConnection.connect(configuration, group: group))
            } catch {
                result = .failure(error)
            }
            self.finishConnect(result)
            return result
        }
    }

    private func finishConnect(_ result: Result<RedisConnection, RedisError>) {
        let now = ContinuousClock.now
        let orphan = state.withLock { state -> RedisConnection? in
            state.connecting = nil
            switch result {
            case .success(let connection):
                guard !state.isShutDown else { return connection }
                state.connections.append(connection)
                state.failures = 0
                state.retryAt = nil
                return nil
            case .failure(let error):
                state.failures += 1
                state.lastError = error
                state.retryAt = now + backoff(after: state.failures)
                return nil
            }
        }
        orphan?.close()
    }

    /// The wait after `failures` failed connects in a row.
    func backoff(after failures: Int) -> Duration {
        var wait = configuration.initialBackoff
        for _ in 1..<max(1, min(failures, 30)) {
            wait *= 2
            if wait >= configuration.maximumBackoff { return configuration.maximumBackoff }
        }
        return min(wait, configuration.maximumBackoff)
    }
}

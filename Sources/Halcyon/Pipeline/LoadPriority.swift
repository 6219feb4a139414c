/// A priority that can change while work waits: 0 (lowest) to 1 (highest).
///
/// The retrieve pipeline gives each stage one: its value is the highest
/// priority of the stage's current subscribers, so it rises when a more
/// urgent caller joins and falls when that caller leaves. Loaders observe it
/// to reorder waiting requests (``ImageDownloader`` moves a waiting download
/// in its queue). Thread-safe; observers are called on the thread that
/// changed the value, outside any lock, and only when the value changes.
public final class LoadPriority: Sendable {
    private struct State {
        var value: Float
        var observers: [Int: @Sendable (Float) -> Void] = [:]
        var nextToken = 0
    }

    private let state: Locked<State>

    /// Makes a priority with `value`, clamped to 0...1.
    public init(_ value: Float) {
        state = Locked(State(value: Self.clamped(value)))
    }

    /// The current value; setting a different one notifies the observers.
    public var value: Float {
        get { state.withLock { $0.value } }
        set {
            let clamped = Self.clamped(newValue)
            let observers = state.withLock { state -> [@Sendable (Float) -> Void] in
                guard state.value != clamped else { return [] }
                state.value = clamped
                return Array(state.observers.values)
            }
            observers.forEach { $0(clamped) }
        }
    }

    /// Calls `handler` with each new value until ``removeObserver(_:)`` gets the returned token.
    @discardableResult
    public func observe(_ handler: @escaping @Sendable (Float) -> Void) -> Int {
        state.withLock { state in
            let token = state.nextToken
            state.nextToken += 1
            state.observers[token] = handler
            return token
        }
    }

    /// Stops calling the observer registered with `token`.
    public func removeObserver(_ token: Int) {
        _ = state.withLock { $0.observers.removeValue(forKey: token) }
    }

    private static func clamped(_ value: Float) -> Float {
        value.isNaN ? 0.5 : min(1, max(0, value))
    }
}

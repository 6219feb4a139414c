/// Awaits the one value an operation hands to `deliver`, from whatever thread it runs on.
///
/// Works like `withCheckedContinuation`, except that the value also passes
/// through a lock: on Linux, ThreadSanitizer misses the ordering a continuation
/// resumed from a dispatch queue gives (swiftlang/swift#57803), and would
/// report the fields of the value itself as raced. The lock costs one
/// uncontended lock and unlock on each side. `deliver` must be called exactly once.
func awaitDelivery<T: Sendable>(_ start: (_ deliver: @escaping @Sendable (T) -> Void) -> Void) async -> T {
    let handoff = Locked(())
    let value = await withCheckedContinuation { (continuation: CheckedContinuation<T, Never>) in
        start { value in
            handoff.withLock { _ in }
            continuation.resume(returning: value)
        }
    }
    handoff.withLock { _ in }
    return value
}

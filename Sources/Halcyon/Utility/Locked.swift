#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#elseif canImport(Darwin)
import Darwin
#endif

/// A value guarded by one `pthread_mutex_t`: the lock every Halcyon target uses for shared state.
///
/// Why not `Synchronization.Mutex`: on Linux it parks threads with raw futex
/// calls made from uninstrumented code, so ThreadSanitizer cannot see it and
/// reports every access it guards as a race. A pthread mutex is intercepted by
/// the sanitizers, which keeps `make test-tsan` meaningful; uncontended, it
/// costs about the same. Not recursive: calling `withLock` from inside its own
/// body deadlocks.
@usableFromInline
package final class Locked<Value>: @unchecked Sendable {
    @usableFromInline let mutex: UnsafeMutablePointer<pthread_mutex_t>
    @usableFromInline let value: UnsafeMutablePointer<Value>

    /// Makes a lock guarding `initialValue`.
    package init(_ initialValue: Value) {
        mutex = UnsafeMutablePointer<pthread_mutex_t>.allocate(capacity: 1)
        mutex.initialize(to: pthread_mutex_t())
        pthread_mutex_init(mutex, nil)
        value = UnsafeMutablePointer<Value>.allocate(capacity: 1)
        value.initialize(to: initialValue)
    }

    deinit {
        pthread_mutex_destroy(mutex)
        mutex.deinitialize(count: 1)
        mutex.deallocate()
        value.deinitialize(count: 1)
        value.deallocate()
    }

    /// Runs `body` with exclusive access to the value; returns what it returns.
    @inlinable
    package func withLock<Result, Failure: Error>(_ body: (inout Value) throws(Failure) -> Result) throws(Failure) -> Result {
        pthread_mutex_lock(mutex)
        defer { pthread_mutex_unlock(mutex) }
        return try body(&value.pointee)
    }
}

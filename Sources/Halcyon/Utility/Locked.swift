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
///
/// A copy shares the lock and the value (it is a handle). The value and the
/// mutex live in one heap block, so making one is a single allocation: the
/// download path makes several per request.
@usableFromInline
package struct Locked<Value>: @unchecked Sendable {
    @usableFromInline let storage: LockedStorage<Value>

    /// Makes a lock guarding `initialValue`.
    package init(_ initialValue: Value) {
        storage = LockedStorage.make(initialValue)
    }

    /// Runs `body` with exclusive access to the value; returns what it returns.
    @inlinable
    package func withLock<Result, Failure: Error>(_ body: (inout Value) throws(Failure) -> Result) throws(Failure) -> Result {
        try storage.withLock(body)
    }
}

/// The heap block of a ``Locked``: the value as the header, the mutex as the one tail element (its address is stable).
@usableFromInline
package final class LockedStorage<Value>: ManagedBuffer<Value, pthread_mutex_t> {
    static func make(_ value: Value) -> LockedStorage<Value> {
        let buffer = create(minimumCapacity: 1) { _ in value }
        buffer.withUnsafeMutablePointerToElements { mutex in
            mutex.initialize(to: pthread_mutex_t())
            pthread_mutex_init(mutex, nil)
        }
        return unsafeDowncast(buffer, to: LockedStorage<Value>.self)
    }

    deinit {
        withUnsafeMutablePointerToElements { mutex in
            pthread_mutex_destroy(mutex)
            mutex.deinitialize(count: 1)
        }
    }

    /// Runs `body` with the mutex held.
    @inlinable
    package func withLock<Result, Failure: Error>(_ body: (inout Value) throws(Failure) -> Result) throws(Failure) -> Result {
        try withUnsafeMutablePointers { value, mutex throws(Failure) -> Result in
            pthread_mutex_lock(mutex)
            defer { pthread_mutex_unlock(mutex) }
            return try body(&value.pointee)
        }
    }
}

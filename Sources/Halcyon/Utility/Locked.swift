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
/// A copy shares the lock and the value (it is a handle). The mutex and the
/// value live in one heap block, so making one is a single allocation: the
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

/// The heap block of a ``Locked``: the mutex as the header, the value as the one tail element.
///
/// The value is the tail element, not the header, so that an empty value type (`Locked(())`) does not share
/// its address with the object's own header: ThreadSanitizer would report the value's accesses as racing
/// with every read of the object's type.
@usableFromInline
package final class LockedStorage<Value>: ManagedBuffer<pthread_mutex_t, Value> {
    static func make(_ value: Value) -> LockedStorage<Value> {
        let buffer = create(minimumCapacity: 1) { _ in pthread_mutex_t() }
        buffer.withUnsafeMutablePointers { mutex, element in
            pthread_mutex_init(mutex, nil)
            element.initialize(to: value)
        }
        return unsafeDowncast(buffer, to: LockedStorage<Value>.self)
    }

    deinit {
        withUnsafeMutablePointers { mutex, element in
            pthread_mutex_destroy(mutex)
            element.deinitialize(count: 1)
        }
    }

    /// Runs `body` with the mutex held.
    @inlinable
    package func withLock<Result, Failure: Error>(_ body: (inout Value) throws(Failure) -> Result) throws(Failure) -> Result {
        try withUnsafeMutablePointers { mutex, value throws(Failure) -> Result in
            pthread_mutex_lock(mutex)
            defer { pthread_mutex_unlock(mutex) }
            return try body(&value.pointee)
        }
    }
}

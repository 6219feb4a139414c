import Foundation
#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// Thin POSIX file helpers for ``DiskStorage``: whole reads and writes, stats, times.
///
/// Plain system calls instead of `FileManager` so a disk hit costs one open,
/// one fstat, one read and one close. Every function reports failure with
/// `errno` rather than throwing; callers turn that into `HalcyonError`.
enum DiskFile {
    /// What `fstat`/`stat` says about a file.
    struct Status {
        var size: Int
        /// The bytes the file system allocated for the file (`st_blocks` × 512).
        var allocated: Int
        var modificationDate: Date
        /// The inode change time, seconds and nanoseconds; any write or attribute change moves it.
        var changeTime: (seconds: Int, nanoseconds: Int)
        var device: UInt64
        var inode: UInt64
        var isRegularFile: Bool
    }

    static func status(_ raw: stat) -> Status {
        #if canImport(Darwin)
        let time = raw.st_mtimespec
        let change = raw.st_ctimespec
        #else
        let time = raw.st_mtim
        let change = raw.st_ctim
        #endif
        let seconds = Double(time.tv_sec) + Double(time.tv_nsec) / 1_000_000_000
        return Status(size: Int(raw.st_size), allocated: Int(raw.st_blocks) * 512, modificationDate: Date(timeIntervalSince1970: seconds),
                      changeTime: (Int(change.tv_sec), Int(change.tv_nsec)),
                      device: UInt64(raw.st_dev), inode: UInt64(raw.st_ino),
                      isRegularFile: (raw.st_mode & S_IFMT) == S_IFREG)
    }

    /// The disk space a file counts for against a size limit: what the file system allocated for it (a 100-byte
    /// file takes a whole block), and never less than its length (a file system that compresses or has not
    /// allocated yet reports fewer blocks).
    static func footprint(_ status: Status) -> Int { max(status.size, status.allocated) }

    /// The status of an open file, or `nil` with `errno` set.
    static func status(fd: Int32) -> Status? {
        var raw = stat()
        guard fstat(fd, &raw) == 0 else { return nil }
        return status(raw)
    }

    /// The status of the file at `path` (not following a final symlink), or `nil` with `errno` set.
    static func status(path: String) -> Status? {
        var raw = stat()
        guard lstat(path, &raw) == 0 else { return nil }
        return status(raw)
    }

    /// Reads exactly `count` bytes at `offset`; returns how many were read before EOF or an error.
    static func read(fd: Int32, into buffer: UnsafeMutableRawPointer, count: Int, offset: Int) -> Int {
        var done = 0
        while done < count {
            let result = pread(fd, buffer + done, count - done, off_t(offset + done))
            if result > 0 {
                done += result
            } else if result == 0 {
                break
            } else if errno != EINTR {
                break
            }
        }
        return done
    }

    /// Writes all of `bytes` at `offset`; `false` with `errno` set on failure.
    static func write(fd: Int32, _ bytes: UnsafeRawBufferPointer, offset: Int) -> Bool {
        guard let base = bytes.baseAddress else { return true }
        var done = 0
        while done < bytes.count {
            let result = pwrite(fd, base + done, bytes.count - done, off_t(offset + done))
            if result > 0 {
                done += result
            } else if result < 0, errno == EINTR {
                continue
            } else {
                if result == 0 { errno = EIO }
                return false
            }
        }
        return true
    }

    /// Sets both access and modification time of an open file to `date`.
    @discardableResult
    static func setTimes(fd: Int32, to date: Date) -> Bool {
        let seconds = date.timeIntervalSince1970.rounded(.down)
        guard seconds.isFinite, abs(seconds) < 1e15 else { return false }
        let nanoseconds = (date.timeIntervalSince1970 - seconds) * 1_000_000_000
        let spec = timespec(tv_sec: Int(seconds), tv_nsec: Int(nanoseconds))
        var times = (spec, spec)
        return withUnsafePointer(to: &times) { pointer in
            pointer.withMemoryRebound(to: timespec.self, capacity: 2) { futimens(fd, $0) == 0 }
        }
    }

    /// Opens `path` with `flags`, retrying on `EINTR`; -1 with `errno` set on failure.
    static func open(_ path: String, _ flags: Int32, mode: mode_t = 0o644) -> Int32 {
        while true {
            #if canImport(Glibc)
            let fd = Glibc.open(path, flags | O_CLOEXEC, mode)
            #else
            let fd = Darwin.open(path, flags | O_CLOEXEC, mode)
            #endif
            if fd >= 0 || errno != EINTR { return fd }
        }
    }

    /// Closes `fd`, ignoring errors (the data was already checked or synced).
    static func close(_ fd: Int32) {
        #if canImport(Glibc)
        _ = Glibc.close(fd)
        #else
        _ = Darwin.close(fd)
        #endif
    }

    /// The message of the current `errno`.
    static func lastError() -> String {
        String(cString: strerror(errno))
    }

    /// Removes `path` only if it is still the file `expected` describes (same device and inode).
    ///
    /// Keeps a reader that found a corrupt file from deleting a good entry
    /// another process renamed into place meanwhile.
    static func unlinkIfSame(_ path: String, as expected: Status) {
        guard let current = status(path: path),
              current.device == expected.device, current.inode == expected.inode else { return }
        _ = unlink(path)
    }
}

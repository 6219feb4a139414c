import Foundation
#if canImport(Glibc)
import Glibc
#endif

/// A plain TCP connection to 127.0.0.1 for tests that need to misbehave as a
/// client would: send part of a request, hang up, hold a socket idle.
final class RawSocket {
    private(set) var descriptor: Int32

    /// Connects to 127.0.0.1:`port`; nil when the connection fails. `receiveBuffer`, when given, is the socket's
    /// receive buffer in bytes (set before connecting, so the window offered to the server stays that small).
    init?(port: Int, host: String = "127.0.0.1", receiveBuffer: Int32? = nil) {
        descriptor = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        guard descriptor >= 0 else { return nil }
        if var size = receiveBuffer {
            setsockopt(descriptor, SOL_SOCKET, SO_RCVBUF, &size, socklen_t(MemoryLayout<Int32>.size))
        }
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_port = in_port_t(UInt16(port).bigEndian)
        inet_pton(AF_INET, host, &address.sin_addr)
        let connected = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { connect(descriptor, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) }
        }
        guard connected == 0 else {
            close(descriptor)
            return nil
        }
    }

    deinit { hangUp() }

    /// Sends `text`; false when the peer is gone.
    @discardableResult
    func send(_ text: String) -> Bool {
        let bytes = Array(text.utf8)
        return bytes.withUnsafeBytes { Glibc.send(descriptor, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL)) } == bytes.count
    }

    /// Whether the server closed the connection within `timeout` (a read returns end of file or an error).
    func closedByPeer(within timeout: TimeInterval) -> Bool {
        var pollDescriptor = pollfd(fd: descriptor, events: Int16(POLLIN), revents: 0)
        let end = Date().addingTimeInterval(timeout)
        while Date() < end {
            let ready = poll(&pollDescriptor, 1, Int32(max(1, end.timeIntervalSinceNow * 1000)))
            guard ready > 0 else { continue }
            var buffer = [UInt8](repeating: 0, count: 4096)
            let count = recv(descriptor, &buffer, buffer.count, 0)
            if count <= 0 { return true }
        }
        return false
    }

    /// Whether bytes arrived within `timeout`, seen without reading them.
    func hasData(within timeout: TimeInterval) -> Bool {
        var pollDescriptor = pollfd(fd: descriptor, events: Int16(POLLIN), revents: 0)
        return poll(&pollDescriptor, 1, Int32(timeout * 1000)) > 0 && pollDescriptor.revents & Int16(POLLIN) != 0
    }

    /// Whether the server reset the connection within `timeout`, seen without reading what it sent (a client that
    /// never reads learns of a reset this way; an orderly close waits behind the unread bytes).
    func resetByPeer(within timeout: TimeInterval) -> Bool {
        var pollDescriptor = pollfd(fd: descriptor, events: 0, revents: 0)
        let end = Date().addingTimeInterval(timeout)
        while Date() < end {
            guard poll(&pollDescriptor, 1, Int32(max(1, end.timeIntervalSinceNow * 1000))) > 0 else { continue }
            guard pollDescriptor.revents & Int16(POLLNVAL) == 0 else { return false }
            if pollDescriptor.revents & Int16(POLLERR | POLLHUP) != 0 { return true }
        }
        return false
    }

    /// Reads until `done` says the bytes so far are enough, the peer closes, or `timeout` passes; returns what came.
    func receive(timeout: TimeInterval, until done: (Data) -> Bool) -> Data {
        var received = Data()
        var pollDescriptor = pollfd(fd: descriptor, events: Int16(POLLIN), revents: 0)
        let end = Date().addingTimeInterval(timeout)
        while !done(received), Date() < end {
            guard poll(&pollDescriptor, 1, Int32(max(1, end.timeIntervalSinceNow * 1000))) > 0 else { continue }
            var buffer = [UInt8](repeating: 0, count: 64 * 1024)
            let count = recv(descriptor, &buffer, buffer.count, 0)
            if count <= 0 { break }
            received.append(contentsOf: buffer[..<count])
        }
        return received
    }

    /// Closes the connection from this side.
    func hangUp() {
        if descriptor >= 0 {
            close(descriptor)
            descriptor = -1
        }
    }
}

/// A socket is used by one task at a time; ``offThePool(_:)`` hands it to a thread and back.
extension RawSocket: @unchecked Sendable {}

/// Runs blocking socket work on a thread of its own, so it never holds one of Swift's cooperative threads: the
/// server under test runs its handlers on them, and tests run in parallel.
func offThePool<T: Sendable>(_ body: @escaping @Sendable () -> T) async -> T {
    await withCheckedContinuation { continuation in
        Thread { continuation.resume(returning: body()) }.start()
    }
}

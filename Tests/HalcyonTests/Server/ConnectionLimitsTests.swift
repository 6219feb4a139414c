import Halcyon
import NIOCore
import NIOEmbedded
@testable import HalcyonServer
import Testing

/// `ConnectionLimits`' accounting without sockets: connections are embedded channels, counted in and out directly,
/// at made-up times; the ends the limits send down a connection's pipeline are recorded.
@Suite("Server: connection limits accounting")
struct ConnectionLimitsTests {
    /// Records the ``ConnectionHandler/End`` events that reach it.
    final class EndRecorder: ChannelOutboundHandler, @unchecked Sendable {
        typealias OutboundIn = Any
        let ends = Locked<[Bool]>([])

        func triggerUserOutboundEvent(context: ChannelHandlerContext, event: Any, promise: EventLoopPromise<Void>?) {
            guard let end = event as? ConnectionHandler.End else { return context.triggerUserOutboundEvent(event, promise: promise) }
            ends.withLock { $0.append(end.reset) }
            promise?.succeed()
        }
    }

    /// `count` embedded channels, each with its recorder.
    static func channels(_ count: Int) -> [(channel: EmbeddedChannel, ends: EndRecorder)] {
        (0..<count).map { _ in
            let recorder = EndRecorder()
            return (EmbeddedChannel(handler: recorder), recorder)
        }
    }

    @Test("Up to the cap every connection counts; past it a newcomer is refused until one has waited 1 s, then displaces the longest-waiting, which is ended; only counted connections leave")
    func capDisplacementAndLeave() throws {
        let metrics = ServerMetrics()
        let limits = ConnectionLimits(maxConnections: 3, headerTimeout: .seconds(10), metrics: metrics)
        let connections = Self.channels(6)
        let channels = connections.map(\.channel)
        let start = NIODeadline.now()
        for channel in channels[0..<3] { #expect(limits.enter(channel, now: start)) }
        #expect(limits.counts == (3, 3))
        // A request in flight on the first: it no longer waits.
        limits.update(channels[0], .busy)
        #expect(limits.counts == (3, 2))
        #expect(!limits.enter(channels[3], now: start + .milliseconds(500)), "a newcomer displaced a connection younger than the grace period")
        let later = start + .milliseconds(1100)
        // The third starts waiting again now (an answer was written); the second has waited longest.
        limits.update(channels[2], .head(since: later))
        #expect(limits.enter(channels[4], now: later), "no connection made room though one had waited 1.1 s")
        #expect(connections[1].ends.ends.withLock { $0 } == [false], "the displaced connection, waiting for a head, was not closed")
        #expect(limits.counts == (3, 2))
        // The displaced connection's leave does not count out its successor; a refused one was never counted.
        limits.leave(channels[1])
        limits.leave(channels[3])
        #expect(limits.openConnections == 3)
        #expect(!limits.enter(channels[5], now: later), "the waiting connections are younger than the grace period")
        for channel in [channels[0], channels[2], channels[4]] { limits.leave(channel) }
        // Leaving twice counts out once.
        limits.leave(channels[0])
        #expect(limits.counts == (0, 0))
        let text = String(decoding: metrics.render(), as: UTF8.self)
        #expect(text.contains("halcyon_connections_displaced_total 1\n") && text.contains("halcyon_connections_refused_total 2\n"))
        for channel in channels { _ = try? channel.finish() }
    }

    @Test("A connection waiting for its client to read is displaced with a reset; closeAll closes those waiting for a head and resets the others")
    func endsResetWhoseClientsDoNotRead() throws {
        let limits = ConnectionLimits(maxConnections: 2, headerTimeout: .seconds(10))
        let connections = Self.channels(4)
        let start = NIODeadline.now()
        #expect(limits.enter(connections[0].channel, now: start) && limits.enter(connections[1].channel, now: start))
        limits.update(connections[0].channel, .read(since: start))
        limits.update(connections[1].channel, .head(since: start + .milliseconds(10)))
        #expect(limits.enter(connections[2].channel, now: start + .seconds(2)))
        #expect(connections[0].ends.ends.withLock { $0 } == [true], "a connection whose client stopped reading was not reset")
        limits.update(connections[2].channel, .busy)
        limits.closeAll()
        #expect(connections[1].ends.ends.withLock { $0 } == [false])
        #expect(connections[2].ends.ends.withLock { $0 } == [true])
        #expect(connections[3].ends.ends.withLock { $0 }.isEmpty)
        for connection in connections { _ = try? connection.channel.finish() }
    }
}

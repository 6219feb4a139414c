import NIOCore
import NIOEmbedded
@testable import HalcyonServer
import Testing

/// `ConnectionLimits`' accounting without sockets: connections are embedded channels, counted in and out directly.
@Suite("Server: connection limits accounting")
struct ConnectionLimitsTests {
    @Test("Up to the cap every connection counts; past it a newcomer is refused until one has waited 1 s, then displaces the longest-waiting; only counted connections leave")
    func capDisplacementAndLeave() async throws {
        let metrics = ServerMetrics()
        let limits = ConnectionLimits(maxConnections: 3, headerTimeout: .seconds(10), metrics: metrics)
        let channels = (0..<6).map { _ in EmbeddedChannel() }
        let first = try #require(limits.enter(channels[0]))
        let second = try #require(limits.enter(channels[1]))
        let third = try #require(limits.enter(channels[2]))
        #expect(limits.counts == (3, 3))
        // A request in flight on the first: it no longer waits.
        first.stopWaiting()
        #expect(limits.counts == (3, 2))
        #expect(limits.enter(channels[3]) == nil, "a newcomer displaced a connection younger than the grace period")
        try await Task.sleep(for: .milliseconds(1100))
        // The third starts waiting again now (an answer was written); the second has waited longest.
        third.startWaiting()
        let fourth = try #require(limits.enter(channels[4]), "no connection made room though one had waited 1.1 s")
        #expect(second.waitingSince == nil, "the displaced connection still counts as waiting")
        #expect(limits.counts == (3, 2))
        // The displaced connection's leave does not count out its successor; a refused one was never counted.
        limits.leave(second)
        #expect(limits.openConnections == 3)
        #expect(limits.enter(channels[5]) == nil, "the waiting connections are younger than the grace period")
        for slot in [first, third, fourth] { limits.leave(slot) }
        // Leaving twice counts out once.
        limits.leave(first)
        #expect(limits.counts == (0, 0))
        let text = String(decoding: metrics.render(), as: UTF8.self)
        #expect(text.contains("halcyon_connections_displaced_total 1\n") && text.contains("halcyon_connections_refused_total 2\n"))
        for channel in channels { _ = try? channel.finish() }
    }

    @Test("A connection whose head arrived after the search read its wait is not claimed; a claim says whether it waited to read")
    func staleClaimFails() throws {
        let channel = EmbeddedChannel()
        let slot = ConnectionSlot(channel: channel)
        let read = try #require(slot.waitingSince)
        slot.stopWaiting()
        #expect(slot.claim(since: read) == nil)
        slot.startWaiting()
        #expect(slot.claim(since: read) == nil, "a wait that restarted later was claimed by the old time")
        let now = try #require(slot.waitingSince)
        #expect(slot.claim(since: now) == false && slot.waitingSince == nil)
        slot.startWaiting(toRead: true)
        let reading = try #require(slot.waitingSince)
        #expect(slot.claim(since: reading) == true, "a wait to read was not claimed as one")
        _ = try? channel.finish()
    }
}

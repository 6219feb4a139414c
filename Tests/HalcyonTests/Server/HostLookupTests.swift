import Foundation
import Halcyon
@testable import HalcyonServer
import Testing

@Suite("Host lookups off the caller", .serialized)
struct HostLookupTests {
    @Test("A caller stops waiting when its task is cancelled; the blocked lookup finishes later on its own thread")
    func cancelledCallerLeaves() async throws {
        let dns = SlowResolver(delay: 20)
        let lookup = HostLookup(threads: 2, timeout: .seconds(10), resolver: { dns.resolve($0) })
        let started = ContinuousClock.now
        let waiter = Task { await lookup.addresses(of: "a.slow.test") }
        while dns.blocked < 1 { try await Task.sleep(for: .milliseconds(10)) }
        waiter.cancel()
        let outcome = await waiter.value
        #expect(outcome == .failure(.cancelled))
        #expect(ContinuousClock.now - started < .seconds(2), "the cancelled caller waited for the lookup")
        #expect(lookup.running == 1, "the abandoned lookup still runs on its thread")
        dns.release()
        while lookup.running > 0 { try await Task.sleep(for: .milliseconds(10)) }
        #expect(lookup.inFlight == 0)
    }

    @Test("A caller waits at most the timeout")
    func callerTimesOut() async throws {
        let dns = SlowResolver(delay: 20)
        let lookup = HostLookup(threads: 2, timeout: .milliseconds(300), resolver: { dns.resolve($0) })
        let started = ContinuousClock.now
        let outcome = await lookup.addresses(of: "b.slow.test")
        #expect(outcome == .failure(.timedOut))
        let elapsed = ContinuousClock.now - started
        #expect(elapsed >= .milliseconds(300) && elapsed < .seconds(2), "waited \(elapsed)")
        dns.release()
    }

    @Test("Callers of one name share its lookup; past the bound on names in flight a new name is refused at once")
    func sharedAndBounded() async throws {
        let dns = SlowResolver(delay: 20)
        let lookup = HostLookup(threads: 2, maxInFlight: 3, timeout: .seconds(10), resolver: { dns.resolve($0) })
        let same = (0..<5).map { _ in Task { await lookup.addresses(of: "same.slow.test") } }
        let others = ["c.slow.test", "d.slow.test"].map { name in Task { await lookup.addresses(of: name) } }
        while lookup.inFlight < 3 { try await Task.sleep(for: .milliseconds(10)) }
        #expect(lookup.running == 2, "two threads: the third name waits for one")
        let started = ContinuousClock.now
        #expect(await lookup.addresses(of: "e.slow.test") == .failure(.busy))
        #expect(ContinuousClock.now - started < .milliseconds(500))
        dns.release()
        for task in same + others {
            #expect(await task.value == .success([IPAddress("127.0.0.1")].compactMap { $0 }))
        }
        #expect(dns.calls == 3, "five callers of one name made one lookup")
    }

    @Test("A queued name whose callers all left is dropped before it starts")
    func abandonedQueuedNameDropped() async throws {
        let dns = SlowResolver(delay: 20)
        let lookup = HostLookup(threads: 1, timeout: .seconds(10), resolver: { dns.resolve($0) })
        let first = Task { await lookup.addresses(of: "f.slow.test") }
        while dns.blocked < 1 { try await Task.sleep(for: .milliseconds(10)) }
        let queued = Task { await lookup.addresses(of: "g.slow.test") }
        while lookup.inFlight < 2 { try await Task.sleep(for: .milliseconds(10)) }
        queued.cancel()
        #expect(await queued.value == .failure(.cancelled))
        #expect(lookup.inFlight == 1, "the abandoned queued name left the queue")
        dns.release()
        _ = await first.value
        #expect(dns.calls == 1, "the abandoned name was never looked up")
    }
}

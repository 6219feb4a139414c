import Foundation
import Halcyon
import NIOCore
import NIOEmbedded
@testable import HalcyonServer
import Testing

/// The cap's ``ConnectionTable`` as a value (made-up connections and times), and hang-up signals reaching a
/// request's work as events (``HangUpSignals``, ``Admission``) on embedded channels.
@Suite("Server: connection table and hang-up signals")
struct ConnectionTableTests {
    typealias Table = ConnectionTable<Int>
    static let start = NIODeadline.uptimeNanoseconds(1_000_000_000_000)

    @Test("At the cap a newcomer displaces the longest-waiting connection once it has waited the grace; busy ones never; a reader's displacement is a reset")
    func displacement() {
        var table = Table(capacity: 2, grace: .seconds(1))
        let start = Self.start
        #expect(table.enter(1, now: start) == .admitted && table.enter(2, now: start) == .admitted)
        table.update(1, .busy)
        #expect(table.enter(3, now: start + .milliseconds(999)) == .refused)
        #expect(table.enter(3, now: start + .seconds(1)) == .displacing(2, reset: false))
        #expect(table.open == 2 && table.waiting == 1)
        // The displaced connection's leave counts nothing out; a refused one was never counted.
        let leftDisplaced = table.leave(2)
        #expect(!leftDisplaced)
        #expect(table.open == 2)
        table.update(3, .read(since: start + .seconds(1)))
        #expect(table.enter(4, now: start + .seconds(2)) == .displacing(3, reset: true))
        // Only the busy one and the newcomer are left; the busy one is never taken.
        table.update(4, .busy)
        #expect(table.enter(5, now: start + .seconds(60)) == .refused)
        #expect(table.endAll().sorted { $0.id < $1.id }.map(\.reset) == [true, true])
        let left = [table.leave(1), table.leave(4)]
        #expect(left == [true, true] && table.open == 0)
    }

    @Test("A refusal holds until the longest wait can reach the grace, without a search; a wait that restarts later is not taken early")
    func refusalUntilGrace() {
        var table = Table(capacity: 1, grace: .seconds(1))
        let start = Self.start
        #expect(table.enter(1, now: start) == .admitted)
        #expect(table.enter(2, now: start + .milliseconds(500)) == .refused)
        // The wait restarted: at 1 s from the start it has waited only 0.4 s.
        table.update(1, .head(since: start + .milliseconds(600)))
        #expect(table.enter(2, now: start + .seconds(1)) == .refused)
        #expect(table.enter(2, now: start + .milliseconds(1600)) == .displacing(1, reset: false))
    }

    @Test("Invariants over 20 000 random events: at most the capacity counted, open is the number counted in minus those gone, only waiting connections displaced, after the grace")
    func randomInvariants() {
        var generator = SeededGenerator(state: 42)
        var table = Table(capacity: 8, grace: .seconds(1))
        var counted = Set<Int>()
        var waits: [Int: ConnectionWait] = [:]
        var now = Self.start
        var nextID = 0
        for _ in 0..<20_000 {
            now = now + .milliseconds(Int64(generator.next() % 200))
            switch generator.next() % 4 {
            case 0:
                nextID += 1
                switch table.enter(nextID, now: now) {
                case .admitted:
                    #expect(counted.count < 8)
                    counted.insert(nextID)
                case .displacing(let old, let reset):
                    let since = waits[old]?.since
                    #expect(counted.count == 8 && since.map { $0 + .seconds(1) <= now } == true, "displaced \(old) waiting since \(String(describing: since))")
                    if case .read = waits[old] { #expect(reset) } else { #expect(!reset) }
                    counted.remove(old)
                    counted.insert(nextID)
                case .refused:
                    #expect(counted.count == 8)
                    #expect(!waits.contains { counted.contains($0.key) && ($0.value.since.map { $0 + .seconds(1) <= now } ?? false) })
                }
                waits[nextID] = .head(since: now)
            case 1, 2:
                guard let id = counted.randomElement(using: &generator) else { continue }
                let wait: ConnectionWait = [.busy, .head(since: now), .read(since: now)][Int(generator.next() % 3)]
                table.update(id, wait)
                waits[id] = wait
            default:
                guard let id = (1...max(1, nextID)).randomElement(using: &generator) else { continue }
                let left = table.leave(id)
                #expect(left == counted.contains(id))
                counted.remove(id)
            }
            #expect(table.open == counted.count && table.open <= 8)
        }
    }

    // MARK: - Hang-up signals

    /// A testing channel that is active (connected).
    static func activeChannel() async throws -> NIOAsyncTestingChannel {
        let channel = NIOAsyncTestingChannel()
        try await channel.connect(to: SocketAddress(ipAddress: "127.0.0.1", port: 1)).get()
        return channel
    }

    @Test("A hang-up calls the work's callback once; a cancelled registration is not called; none is taken after the hang-up or the close")
    func hangUpSignals() async throws {
        let signals = HangUpSignals()
        let channel = try await Self.activeChannel()
        let calls = Locked(0)
        let kept = try #require(signals.register(channel) { calls.withLock { $0 += 1 } })
        let cancelled = try #require(signals.register(channel) { calls.withLock { $0 += 100 } })
        signals.cancel(cancelled)
        #expect(!signals.hasHungUp(channel))
        signals.hungUp(channel)
        signals.hungUp(channel)
        #expect(calls.withLock { $0 } == 1)
        #expect(signals.hasHungUp(channel) && signals.register(channel, {}) == nil)
        signals.cancel(kept)
        _ = try? await channel.finish()
        for _ in 0..<100 where signals.watchedCount > 0 { try await Task.sleep(for: .milliseconds(10)) }
        #expect(signals.watchedCount == 0, "the record outlived its channel")
        #expect(signals.register(channel, {}) == nil, "a closed channel took a registration")
    }

    @Test("Work stops on the client's hang-up (499) and at shutdown (503), long before its deadline; at its deadline (504); no work starts for a client gone already")
    func admissionStops() async throws {
        let limits = ConnectionLimits(maxConnections: 4, headerTimeout: .seconds(10))
        let channel = try await Self.activeChannel()
        /// The status of work that would run 30 s under `timeout`, stopped by `stop` once it runs.
        func status(timeout: Duration, _ stop: (Admission) -> Void) async throws -> Int? {
            let admission = Admission(slots: SlotQueue(limit: 4, queue: 0), memory: MemoryBudget(capacity: 1 << 20),
                                      queueTimeout: .seconds(1), requestTimeout: timeout, hangUps: limits.hangUps)
            let run = Task { try await admission.run(on: channel) { _ in try await Task.sleep(for: .seconds(30)) } }
            for _ in 0..<500 where admission.runningCount == 0 { try await Task.sleep(for: .milliseconds(10)) }
            stop(admission)
            let result = await run.result
            #expect(admission.runningCount == 0)
            switch result {
            case .success: return 200
            case .failure(let error): return (error as? ServerError)?.statusCode
            }
        }
        // Without their signal, the work would end after 30 s with 200, or at its 60 s deadline with 504.
        #expect(try await status(timeout: .milliseconds(300)) { _ in } == 504)
        #expect(try await status(timeout: .seconds(60)) { $0.cancelAll() } == 503)
        #expect(try await status(timeout: .seconds(60)) { _ in limits.hangUps.hungUp(channel) } == 499)
        let ran = Locked(false)
        let admission = Admission(slots: SlotQueue(limit: 1, queue: 0), memory: MemoryBudget(capacity: 1 << 20),
                                  queueTimeout: .seconds(1), requestTimeout: .seconds(60), hangUps: limits.hangUps)
        let gone = await #expect(throws: ServerError.self) { try await admission.run(on: channel) { _ in ran.withLock { $0 = true } } }
        #expect(gone?.statusCode == 499 && !ran.withLock { $0 })
        _ = try? await channel.finish()
    }
}

import NIOCore
import NIOHTTP1
@testable import HalcyonServer
import Testing

/// The connection policy as values, without sockets: a connection's ``ConnectionStateMachine`` (head and write
/// timeouts, held closes, keep-alive rules, hang-up) and the cap's ``ConnectionTable`` (displacement), driven
/// by made-up events, times and outputs; their invariants checked as code.
@Suite("Server: connection policy state machines")
struct ConnectionPolicyStateMachineTests {
    /// A connection's output as the state machine sees it.
    struct Output: ConnectionOutputProbe {
        var isActive = true
        var isWritable = true
        var bufferedBytes = 0
        var bytesAcknowledged: UInt64 = 0
    }

    typealias Machine = ConnectionStateMachine
    static let timeouts = Machine.Timeouts(head: .seconds(3), write: .seconds(10))
    static let start = NIODeadline.uptimeNanoseconds(1_000_000_000_000)

    static func request(_ version: HTTPVersion = .http1_1, keepAlive: Bool = true, head: Bool = false) -> Machine.Request {
        Machine.Request(version: version, keepAlive: keepAlive, isHEAD: head)
    }

    /// A watched connection past its start, with one request answered and written out at `start + 1 s`.
    static func answeredOnce() -> Machine {
        var machine = Machine(timeouts: timeouts)
        _ = machine.started(now: start)
        _ = machine.requestHead(request())
        _ = machine.answerHead(status: 200, keepAlive: true, hasLength: true)
        _ = machine.answerEnd()
        _ = machine.answerEndWritten(now: start + .seconds(1), output: Output())
        return machine
    }

    // MARK: - Head deadline

    @Test("A head is awaited from the start and after each answer is written out, not while a request is in flight; one timer at a time")
    func headDeadline() {
        var machine = Machine(timeouts: Self.timeouts)
        let start = Self.start
        #expect(machine.started(now: start) == [.report(.head(since: start)), .schedule(start + .seconds(3))])
        let head = machine.requestHead(Self.request())
        #expect(head.closing == false && head.actions == [.report(.busy)])
        #expect(machine.headDeadline == nil && machine.inFlight == 1)
        // The timer set for the first head finds no deadline: it stops.
        #expect(machine.timerFired(now: start + .seconds(3), output: Output()) == [])
        #expect(machine.answerHead(status: 200, keepAlive: true, hasLength: true) == .unchanged)
        #expect(machine.answerEnd() == false && machine.unsentEnds == 1)
        let written = start + .seconds(4)
        #expect(machine.answerEndWritten(now: written, output: Output()) == [.report(.head(since: written)), .schedule(written + .seconds(3))])
        // Everything went out within the flush: nothing waits for the client to read.
        #expect(machine.flushed(now: written, output: Output()) == [])
        #expect(machine.timerFired(now: written + .seconds(2), output: Output()) == [.schedule(written + .seconds(3))])
        #expect(machine.timerFired(now: written + .seconds(3), output: Output()) == [.close])
    }

    @Test("A pending timer that fires earlier is kept; the later deadline is found when it fires")
    func oneTimerAtATime() {
        var machine = Self.answeredOnce()
        // The timer from the start (due at 3 s) is still pending; the head now due at 4 s needs none of its own.
        #expect(machine.timer == Self.start + .seconds(3))
        #expect(machine.timerFired(now: Self.start + .seconds(3), output: Output()) == [.schedule(Self.start + .seconds(4))])
    }

    // MARK: - Write timeout

    @Test("Stuck output waits for the client to read; progress restarts the wait; no progress for the write timeout resets")
    func writeTimeout() {
        var machine = Machine(timeouts: Self.timeouts)
        let start = Self.start
        _ = machine.started(now: start)
        _ = machine.requestHead(Self.request())
        _ = machine.answerEnd()
        var output = Output(isWritable: false, bufferedBytes: 500_000, bytesAcknowledged: 1000)
        #expect(machine.flushed(now: start, output: output) == [.report(.read(since: start)), .schedule(start + .milliseconds(400))])
        // The timer from the start is due at 3 s, later than the first look at 0.4 s: replaced.
        #expect(machine.timer == start + .milliseconds(400))
        // A new head from a client that stopped reading: it still waits to read.
        #expect(machine.requestHead(Self.request()).actions == [])
        #expect(machine.timerFired(now: start + .milliseconds(400), output: output) == [.schedule(start + .milliseconds(800))])
        output.bytesAcknowledged = 2000
        let moved = start + .milliseconds(800)
        #expect(machine.timerFired(now: moved, output: output) == [.report(.read(since: moved)), .schedule(moved + .milliseconds(400))])
        #expect(machine.timerFired(now: moved + .seconds(9), output: output) == [.schedule(moved + .seconds(9) + .milliseconds(400))])
        #expect(machine.timerFired(now: moved + .seconds(10), output: output) == [.resetForWriteTimeout])
        #expect(machine.forced, "a reset connection's close would be held")
        #expect(machine.closeRequested(all: true, active: true) == .closeNow)
    }

    @Test("Fewer bytes buffered is progress; more queued behind stuck output is not")
    func bufferedProgress() {
        var machine = Machine(timeouts: Self.timeouts)
        let start = Self.start
        _ = machine.started(now: start)
        _ = machine.requestHead(Self.request())
        _ = machine.answerEnd()
        var output = Output(isWritable: false, bufferedBytes: 100_000)
        _ = machine.flushed(now: start, output: output)
        output.bufferedBytes = 300_000
        #expect(machine.writabilityChanged(now: start + .milliseconds(100), output: output) == [])
        output.bufferedBytes = 250_000
        let look = start + .milliseconds(400)
        #expect(machine.timerFired(now: look, output: output) == [.report(.read(since: look)), .schedule(look + .milliseconds(400))])
        // Writable again, and the answer written out: a head is awaited.
        output = Output()
        let out = start + .seconds(1)
        #expect(machine.answerEndWritten(now: out, output: output) == [.report(.head(since: out))])
        #expect(machine.headDeadline == out + .seconds(3))
    }

    // MARK: - Held closes

    @Test("A close asked for while an answer is going out is held until it is written out; forced, partial and unwatched closes go at once")
    func heldCloses() {
        var machine = Machine(timeouts: Self.timeouts)
        _ = machine.started(now: Self.start)
        _ = machine.requestHead(Self.request())
        #expect(machine.closeRequested(all: true, active: true) == .closeNow, "a close with nothing to write out was held")
        _ = machine.answerEnd()
        #expect(machine.closeRequested(all: false, active: true) == .closeNow)
        #expect(machine.closeRequested(all: true, active: false) == .closeNow)
        #expect(machine.closeRequested(all: true, active: true) == .hold(stopReading: true))
        #expect(machine.closeRequested(all: true, active: true) == .hold(stopReading: false))
        #expect(machine.answerEndWritten(now: Self.start + .seconds(1), output: Output()) == [.close])
        #expect(!machine.closeHeld)

        var forced = Machine(timeouts: Self.timeouts)
        _ = forced.requestHead(Self.request())
        _ = forced.answerEnd()
        forced.forceEnd()
        #expect(forced.closeRequested(all: true, active: true) == .closeNow)

        var unwatched = Machine(timeouts: nil)
        #expect(unwatched.started(now: Self.start) == [])
        _ = unwatched.requestHead(Self.request())
        _ = unwatched.answerEnd()
        #expect(unwatched.closeRequested(all: true, active: true) == .closeNow, "a close was held with no write timeout to bound it")
    }

    // MARK: - Keep-alive

    @Test("HTTP/1.0 and Connection: close end the connection after their answer; persistent requests keep it", arguments: [
        // version, keep-alive asked, HEAD, status, length, expected rewrite, output closes
        (HTTPVersion.http1_1, true, false, 200, true, Machine.HeadRewrite.unchanged, false),
        (.http1_1, false, false, 200, true, .rewrite(version: nil, connection: "close"), true),
        (.http1_0, false, false, 200, true, .rewrite(version: .http1_0, connection: "close"), true),
        (.http1_0, true, false, 200, true, .rewrite(version: .http1_0, connection: "keep-alive"), false),
        (.http1_0, true, false, 200, false, .rewrite(version: .http1_0, connection: "close"), true),
        (.http1_0, true, true, 200, false, .rewrite(version: .http1_0, connection: "keep-alive"), false),
        (.http1_0, true, false, 304, false, .rewrite(version: .http1_0, connection: "keep-alive"), false),
        (.http1_0, true, false, 204, false, .rewrite(version: .http1_0, connection: "keep-alive"), false),
    ])
    func keepAliveRules(
        version: HTTPVersion, keepAlive: Bool, isHEAD: Bool, status: Int, hasLength: Bool, rewrite: Machine.HeadRewrite, closes: Bool
    ) {
        for timeouts in [Self.timeouts, nil] {
            var machine = Machine(timeouts: timeouts)
            let head = machine.requestHead(Self.request(version, keepAlive: keepAlive, head: isHEAD))
            #expect(head.closing == !keepAlive, "the request reaches Hummingbird with Connection: close when it does not keep the connection")
            #expect(machine.answerHead(status: status, keepAlive: true, hasLength: hasLength) == rewrite)
            #expect(machine.answerEnd() == closes)
        }
    }

    @Test("Answers pair with requests in order; informational heads and answers no request reached pair with none")
    func answersPairInOrder() {
        var machine = Machine(timeouts: Self.timeouts)
        // A parse error's 400 before any head: nothing in flight, nothing paired.
        #expect(machine.answerHead(status: 400, keepAlive: true, hasLength: true) == .unchanged)
        #expect(machine.answerEnd() == false && machine.inFlight == 0)
        _ = machine.requestHead(Self.request())
        _ = machine.requestHead(Self.request(keepAlive: false))
        #expect(machine.inFlight == 2)
        #expect(machine.answerHead(status: 100, keepAlive: true, hasLength: false) == .unchanged)
        #expect(machine.answerHead(status: 200, keepAlive: true, hasLength: true) == .unchanged)
        #expect(machine.answerEnd() == false)
        #expect(machine.answerHead(status: 200, keepAlive: true, hasLength: true) == .rewrite(version: nil, connection: "close"))
        #expect(machine.answerEnd() == true && machine.inFlight == 0)
        // The handler's own answer says close: the connection ends after it even for a persistent request.
        _ = machine.requestHead(Self.request())
        #expect(machine.answerHead(status: 200, keepAlive: false, hasLength: true) == .rewrite(version: nil, connection: "close"))
    }

    // MARK: - Hang-up and removal

    @Test("The client's hang-up is signalled once; after removal no event yields an action")
    func hangUpAndRemoval() {
        var machine = Self.answeredOnce()
        #expect(machine.clientHungUp() == [.signalHangUp])
        #expect(machine.clientHungUp() == [], "the hang-up was signalled twice")
        _ = machine.requestHead(Self.request())
        _ = machine.answerEnd()
        machine.removed()
        let output = Output(isWritable: false, bufferedBytes: 1)
        #expect(machine.timer == nil && machine.headDeadline == nil)
        #expect(machine.started(now: Self.start) == [])
        #expect(machine.requestHead(Self.request()).actions == [])
        #expect(machine.flushed(now: Self.start, output: output) == [])
        #expect(machine.writabilityChanged(now: Self.start, output: output) == [])
        #expect(machine.answerEndWritten(now: Self.start, output: output) == [])
        #expect(machine.timerFired(now: Self.start + .seconds(60), output: output) == [])
        #expect(machine.closeRequested(all: true, active: true) == .closeNow)
    }

    @Test("An inactive connection waits for nothing: writes failed by its close are no progress")
    func inactiveWaitsForNothing() {
        var machine = Machine(timeouts: Self.timeouts)
        _ = machine.started(now: Self.start)
        _ = machine.requestHead(Self.request())
        _ = machine.answerEnd()
        #expect(machine.answerEndWritten(now: Self.start, output: Output(isActive: false)) == [])
        #expect(machine.timerFired(now: Self.start + .seconds(60), output: Output(isActive: false)) == [])
    }

    // MARK: - Invariants

    @Test("Invariants over 20 000 random events: a head deadline only with no request in flight, under a pending timer and after a head report; a held close only with an answer left to write")
    func randomInvariants() {
        var generator = SeededGenerator(state: 7)
        var machine = Machine(timeouts: Self.timeouts)
        var now = Self.start
        var output = Output()
        var lastReport: ConnectionWait?
        func apply(_ actions: [Machine.Action]) -> Bool {
            for case .report(let wait) in actions { lastReport = wait }
            return actions.contains(.close) || actions.contains(.resetForWriteTimeout)
        }
        _ = apply(machine.started(now: now))
        for step in 0..<20_000 {
            now = now + .milliseconds(Int64(generator.next() % 700))
            output.isWritable = generator.next() % 4 != 0
            output.bufferedBytes = Int(generator.next() % 4) * 10_000
            output.bytesAcknowledged += generator.next() % 2 * 1000
            var ended = false
            switch generator.next() % 7 {
            case 0: ended = apply(machine.requestHead(Self.request(keepAlive: generator.next() % 5 != 0)).actions)
            case 1: if machine.inFlight > 0 { _ = machine.answerHead(status: 200, keepAlive: true, hasLength: true); _ = machine.answerEnd() }
            case 2: if machine.unsentEnds > 0 { ended = apply(machine.answerEndWritten(now: now, output: output)) }
            case 3: ended = apply(machine.flushed(now: now, output: output))
            case 4: ended = apply(machine.writabilityChanged(now: now, output: output))
            case 5: if let timer = machine.timer, timer <= now { ended = apply(machine.timerFired(now: now, output: output)) }
            default: _ = machine.closeRequested(all: true, active: true)
            }
            // A connection told to close or reset is done: a new one starts.
            if ended {
                machine = Machine(timeouts: Self.timeouts)
                lastReport = nil
                _ = apply(machine.started(now: now))
            }
            if let deadline = machine.headDeadline {
                #expect(machine.inFlight == 0, "step \(step): a head deadline with a request in flight")
                #expect(machine.timer.map { $0 <= deadline } == true, "step \(step): no timer for the head deadline")
                if case .busy = lastReport { Issue.record("step \(step): reported busy while a head is awaited") }
            } else if case .head = lastReport {
                Issue.record("step \(step): reported waiting for a head while none is awaited")
            }
            #expect(!machine.closeHeld || machine.unsentEnds > 0, "step \(step): a close held with nothing to write out")
        }
    }
}

import NIOCore
import NIOHTTP1

/// What the state machine needs to know of a connection's output when an
/// event comes; read only when asked for (two of them are system calls).
protocol ConnectionOutputProbe {
    /// The connection is open.
    var isActive: Bool { get }
    /// The connection takes writes without buffering past its high-water mark.
    var isWritable: Bool { get }
    /// Bytes written to the connection and not yet to its socket.
    var bufferedBytes: Int { get }
    /// Bytes of output the client's kernel has acknowledged (Linux `TCP_INFO`); 0 where unknown.
    var bytesAcknowledged: UInt64 { get }
}

/// One HTTP/1 connection's policy as a value: keep-alive rules (HTTP/1.0
/// and `Connection: close`), the deadline for each request head, the
/// write timeout for a client that stops reading, closes held until answers
/// are written out, and the client's hang-up. Events in, actions out; no
/// channel inside, so tests drive it with made-up times and outputs.
/// ``ConnectionHandler`` feeds it the connection's events and performs its
/// actions.
///
/// A connection waits for a request head from its start, and again once no
/// request is in flight on it and its last answer has been written out; it
/// stops when a head arrives. Output is stuck when a flush leaves an answer's
/// end unwritten, or the connection stops being writable; until it is all
/// written out, the connection waits for its client to read, from the last
/// progress: an answer written out, the connection writable again, fewer
/// bytes buffered than at the last look, or more bytes acknowledged by the
/// client's kernel (looked at every ``Timeouts/progressInterval``). One timer
/// at a time checks the deadlines.
///
/// Invariants (checked by `ConnectionPolicyStateMachineTests`):
/// - a head deadline is set only while no request is in flight, with a timer pending no later than it, and the
///   cap is told the connection waits for a head exactly while one is awaited;
/// - a close is held only while an answer's end is unwritten, never a forced one, and never without a write
///   timeout to bound it;
/// - answers pair with requests in order; an answer no request reached (a parse error's 400) pairs with none;
/// - after ``removed()``, no event yields an action.
struct ConnectionStateMachine {
    /// The time limits of a watched connection.
    struct Timeouts: Equatable {
        /// Time a client has to send a whole request head.
        var head: TimeAmount
        /// Time stuck output may go without progress before the connection is reset.
        var write: TimeAmount
        /// How often stuck output is looked at for progress.
        var progressInterval = TimeAmount.milliseconds(400)
    }

    /// Something the driver does.
    enum Action: Equatable {
        /// Tell the cap how the connection waits from now on.
        case report(ConnectionWait)
        /// Run ``timerFired(now:output:)`` at this time (replacing the pending timer, which fires later).
        case schedule(NIODeadline)
        /// Close the connection (orderly).
        case close
        /// Reset the connection: its client did not read for the write timeout (count it).
        case resetForWriteTimeout
        /// Tell the request's work that the client hung up.
        case signalHangUp
    }

    /// What the driver does with a close asked for by a handler behind it.
    enum CloseDecision: Equatable {
        /// Pass it on now.
        case closeNow
        /// Hold it until the answers are written out (it then comes as `.close`); `stopReading` the first time.
        case hold(stopReading: Bool)
    }

    /// How an answer's head goes out.
    enum HeadRewrite: Equatable {
        /// As it is.
        case unchanged
        /// With this `Connection` value, and this version when given (an HTTP/1.0 request gets an HTTP/1.0 answer).
        case rewrite(version: HTTPVersion?, connection: String)
    }

    /// What one request asked of the connection.
    struct Request: Equatable {
        var version: HTTPVersion
        var keepAlive: Bool
        var isHEAD: Bool
    }

    /// Stuck output: when it last moved, the most bytes buffered since, and the bytes acknowledged then.
    private struct Stuck {
        var since: NIODeadline
        var buffered: Int
        var acknowledged: UInt64
    }

    /// The limits; nil for an unwatched connection (keep-alive rules only: no deadlines, no held closes).
    let timeouts: Timeouts?
    /// Requests whose head was read and whose answer's end has not been written yet.
    private(set) var inFlight = 0
    /// Answer ends passed on whose write has not completed yet.
    private(set) var unsentEnds = 0
    /// When the awaited request head is due; nil while none is awaited.
    private(set) var headDeadline: NIODeadline?
    private var stuck: Stuck?
    /// When the pending timer fires; nil when none is pending.
    private(set) var timer: NIODeadline?
    /// A close waits for the answers to be written out.
    private(set) var closeHeld = false
    /// The connection is being ended by the server (displacement, write timeout, shutdown): its close is not held.
    private(set) var forced = false
    private var hungUp = false
    private var isRemoved = false
    /// What each unanswered request asked, oldest first.
    private var requests = CircularBuffer<Request>()
    /// The answer being written ends the connection's output.
    private var closeAfterAnswer = false

    /// Makes the state of a connection with `timeouts` (nil: unwatched).
    init(timeouts: Timeouts?) { self.timeouts = timeouts }

    // MARK: - Lifecycle

    /// The connection was counted in at `now`: a request head is awaited.
    mutating func started(now: NIODeadline) -> [Action] {
        guard !isRemoved, timeouts != nil else { return [] }
        return awaitHead(now: now)
    }

    /// The client ended its input (a half-close), or the connection closed: its work is told once.
    mutating func clientHungUp() -> [Action] {
        guard !hungUp else { return [] }
        hungUp = true
        return [.signalHangUp]
    }

    /// The server ends the connection (displacement, shutdown): its close goes through at once.
    mutating func forceEnd() {
        forced = true
        closeHeld = false
    }

    /// The handler left the pipeline: nothing is tracked or timed any more.
    mutating func removed() {
        isRemoved = true
        headDeadline = nil
        stuck = nil
        timer = nil
    }

    // MARK: - Requests and answers

    /// A request head arrived: the answer's head and `Connection` follow `request`; whether the head goes on with
    /// `Connection: close` (the request does not keep the connection), and what to do.
    mutating func requestHead(_ request: Request) -> (closing: Bool, actions: [Action]) {
        requests.append(request)
        guard !isRemoved else { return (!request.keepAlive, []) }
        inFlight += 1
        var actions: [Action] = []
        if inFlight == 1, timeouts != nil {
            headDeadline = nil
            // A client that stopped reading still waits to read, whatever it sends.
            if stuck == nil { actions.append(.report(.busy)) }
        }
        return (!request.keepAlive, actions)
    }

    /// An answer's head goes out with `status`; `keepAlive` is what the head itself says, `hasLength` whether it
    /// has a `Content-Length`. A final answer (200 or more) pairs with the oldest unanswered request.
    mutating func answerHead(status: Int, keepAlive: Bool, hasLength: Bool) -> HeadRewrite {
        guard status >= 200, let request = requests.popFirst() else { return .unchanged }
        closeAfterAnswer = !(request.keepAlive && keepAlive)
        // The usual case: an HTTP/1.1 answer that keeps the connection goes out unchanged.
        guard closeAfterAnswer || request.version != .http1_1 else { return .unchanged }
        if request.version == .http1_0 {
            // An HTTP/1.0 body without a length ends where the connection does.
            let bodiless = request.isHEAD || status == 204 || status == 304
            if !bodiless, !hasLength { closeAfterAnswer = true }
            return .rewrite(version: .http1_0, connection: closeAfterAnswer ? "close" : "keep-alive")
        }
        return closeAfterAnswer ? .rewrite(version: nil, connection: "close") : .unchanged
    }

    /// An answer's end goes out: whether the connection's output closes once it is written (the client still
    /// reads the answer; the connection ends when its input does, or at the head deadline).
    mutating func answerEnd() -> Bool {
        let closeOutput = closeAfterAnswer
        closeAfterAnswer = false
        guard !isRemoved else { return closeOutput }
        // An end without a head (the answer to a head that could not be parsed) leaves nothing in flight.
        inFlight = max(0, inFlight - 1)
        unsentEnds += 1
        return closeOutput
    }

    /// An answer's end was written out (or failed to be).
    mutating func answerEndWritten(now: NIODeadline, output: some ConnectionOutputProbe) -> [Action] {
        guard !isRemoved else { return [] }
        unsentEnds -= 1
        if closeHeld, unsentEnds == 0 {
            closeHeld = false
            return [.close]
        }
        return outputMoved(now: now, progress: true, output: output)
    }

    // MARK: - Output

    /// The driver flushed: what is left unwritten waits for the client.
    mutating func flushed(now: NIODeadline, output: some ConnectionOutputProbe) -> [Action] {
        guard unsentEnds > 0, stuck == nil, !isRemoved else { return [] }
        return outputMoved(now: now, progress: false, output: output)
    }

    /// The connection's writability changed: becoming writable is progress.
    mutating func writabilityChanged(now: NIODeadline, output: some ConnectionOutputProbe) -> [Action] {
        guard !isRemoved else { return [] }
        return outputMoved(now: now, progress: output.isWritable, output: output)
    }

    /// A handler behind asked to close (`all`: the whole connection, not just its output), on an `active`
    /// connection. The idle timeout's close, or the one after a `Connection: close` answer, would otherwise drop
    /// the rest of an answer and end it with a FIN, as if whole.
    mutating func closeRequested(all: Bool, active: Bool) -> CloseDecision {
        guard all, unsentEnds > 0, !isRemoved, !forced, active, timeouts != nil else { return .closeNow }
        let first = !closeHeld
        closeHeld = true
        return .hold(stopReading: first)
    }
}

// MARK: - Waiting and deadlines

extension ConnectionStateMachine {
    /// The pending timer fired at `now`: resets the connection when its stuck output has not moved for the write
    /// timeout, closes it when the awaited head is overdue; otherwise schedules the next look.
    mutating func timerFired(now: NIODeadline, output: some ConnectionOutputProbe) -> [Action] {
        timer = nil
        guard !isRemoved, output.isActive, let timeouts else { return [] }
        var actions: [Action] = []
        var next = headDeadline
        if var stuck {
            let buffered = output.bufferedBytes, acknowledged = output.bytesAcknowledged
            if buffered < stuck.buffered || acknowledged > stuck.acknowledged {
                stuck = Stuck(since: now, buffered: buffered, acknowledged: acknowledged)
                actions.append(.report(.read(since: now)))
            } else if stuck.since + timeouts.write <= now {
                forceEnd()
                return [.resetForWriteTimeout]
            } else {
                stuck.buffered = buffered
            }
            self.stuck = stuck
            let probe = min(now + timeouts.progressInterval, stuck.since + timeouts.write)
            next = min(next ?? probe, probe)
        }
        if let headDeadline, headDeadline <= now { return actions + [.close] }
        if let next { actions += schedule(next) }
        return actions
    }

    /// Records a change of the output: while it is stuck, the client waits to read from its last `progress` (or
    /// from now, when it just got stuck); once it is all out, a request head is awaited from now on when no
    /// request is in flight.
    private mutating func outputMoved(now: NIODeadline, progress: Bool, output: some ConnectionOutputProbe) -> [Action] {
        // Writes failed by a closing connection are no progress, and a closing connection waits for nothing.
        guard let timeouts, output.isActive else { return [] }
        guard unsentEnds == 0, output.isWritable else {
            let buffered = output.bufferedBytes
            if let stuck, !progress {
                // More output queued behind the stuck output is no progress; the client's reading is measured from it.
                self.stuck?.buffered = max(stuck.buffered, buffered)
                return []
            }
            stuck = Stuck(since: now, buffered: buffered, acknowledged: output.bytesAcknowledged)
            return [.report(.read(since: now))] + schedule(now + min(timeouts.progressInterval, timeouts.write))
        }
        stuck = nil
        return inFlight == 0 ? awaitHead(now: now) : [.report(.busy)]
    }

    /// Awaits a request head from `now` on.
    private mutating func awaitHead(now: NIODeadline) -> [Action] {
        guard let timeouts else { return [] }
        let due = now + timeouts.head
        headDeadline = due
        return [.report(.head(since: now))] + schedule(due)
    }

    /// Makes sure a check runs no later than `due`: keeps a pending timer that fires earlier (it finds the later
    /// deadline then and waits on), replaces one that fires later.
    private mutating func schedule(_ due: NIODeadline) -> [Action] {
        if let timer, timer <= due { return [] }
        timer = due
        return [.schedule(due)]
    }
}

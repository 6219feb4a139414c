import NIOCore
import NIOHTTPTypes

/// Watches one connection for ``ConnectionLimits``: counts it in (or closes
/// it at once when the cap is reached and no connection can make room),
/// records while it waits for its client, closes it when a request head does
/// not arrive in time, resets it when its client stops reading, records a
/// client's end of input, and counts it out when it closes.
///
/// A connection waits for a request head from its start, and again once no
/// request is in flight on it and its last answer has been written out; it
/// stops when a head has been decoded. Output is stuck when a flush leaves an
/// answer's end unwritten, or the channel stops being writable; until it is
/// all written out, the connection waits for its client to read, from the
/// last progress: an answer written out, the channel writable again, fewer
/// bytes buffered than at the last look, or more bytes acknowledged by the
/// client's kernel (Linux `TCP_INFO`; looked at every ``progressInterval``).
/// A client's window reopens once it has read about a segment, so a client
/// that reads shows progress every segment or so (1.4 KB on the internet,
/// up to 64 KB on loopback), however slowly it reads. A close asked for
/// while answers are still going out waits for them (see
/// ``close(context:mode:promise:)``). One timer at a time checks the
/// deadlines: a written answer moves the head's deadline and a head clears it, so a busy
/// keep-alive connection schedules a timer about once per timeout, not once
/// per request, and no lock is taken per request.
final class ConnectionWatchHandler: ChannelDuplexHandler, RemovableChannelHandler {
    typealias InboundIn = HTTPRequestPart
    typealias OutboundIn = HTTPResponsePart

    /// How often stuck output is looked at for progress: well inside ``ConnectionLimits/displacementGrace``, so a
    /// client that reads slowly but steadily is never taken for one that stopped.
    static let progressInterval = TimeAmount.milliseconds(400)
    /// Most bytes of output the kernel holds unsent for a connection.
    static let unsentLimit: SocketOptionValue = 128 * 1024

    private let limits: ConnectionLimits
    /// The connection's place in the limits; nil when it was not counted in, or once it has left.
    private var slot: ConnectionSlot?
    /// Requests whose head was read and whose answer's end has not been written yet.
    private var inFlight = 0
    /// Answer ends passed on whose write has not completed yet.
    private var unsentEnds = 0
    /// When the awaited request head is due; nil while none is awaited.
    private var headDeadline: NIODeadline?
    /// While output is stuck: when it last moved, the most bytes the channel buffered since, and the bytes the
    /// client's kernel had acknowledged then.
    private var stuck: (since: NIODeadline, buffered: Int, acknowledged: UInt64)?
    private var timer: (task: Scheduled<Void>, due: NIODeadline)?
    /// Taken out of the pipeline: nothing is tracked or timed any more.
    private var removed = false
    /// A close was asked for while answers were still being written out: it is done once they are.
    private var closeWhenWritten = false

    init(limits: ConnectionLimits) { self.limits = limits }

    func handlerAdded(context: ChannelHandlerContext) {
        limits.hangUps.watch(context.channel)
        slot = limits.enter(context.channel)
        if slot == nil {
            context.close(promise: nil)
            return
        }
        limitUnsentBytes(context)
        awaitHead(context)
    }

    /// Lets the kernel hold at most ``unsentLimit`` bytes not yet sent (`TCP_NOTSENT_LOWAT`, Linux): the rest of an
    /// answer stays in the channel's buffer and leaves it as the client reads, so progress shows in steps of that
    /// size, not of a third of a send buffer that grows to megabytes; and a client that stops reading holds that
    /// much kernel memory, not megabytes.
    private func limitUnsentBytes(_ context: ChannelHandlerContext) {
        #if os(Linux)
        let option = ChannelOptions.tcpOption(NIOBSDSocket.Option(rawValue: 25))
        try? context.channel.syncOptions?.setOption(option, value: Self.unsentLimit)
        #endif
    }

    func handlerRemoved(context: ChannelHandlerContext) {
        removed = true
        headDeadline = nil
        stuck = nil
        timer?.task.cancel()
        timer = nil
        if let slot {
            self.slot = nil
            limits.leave(slot)
        }
    }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        if case .head = unwrapInboundIn(data) {
            inFlight += 1
            if inFlight == 1 {
                headDeadline = nil
                // A client that stopped reading still waits to read, whatever it sends.
                if stuck == nil { slot?.stopWaiting() }
            }
        }
        context.fireChannelRead(data)
    }

    func userInboundEventTriggered(context: ChannelHandlerContext, event: Any) {
        if case ChannelEvent.inputClosed = event { limits.hangUps.hungUp(context.channel) }
        context.fireUserInboundEventTriggered(event)
    }

    func channelInactive(context: ChannelHandlerContext) {
        limits.hangUps.hungUp(context.channel)
        context.fireChannelInactive()
    }

    func channelWritabilityChanged(context: ChannelHandlerContext) {
        if !removed { outputMoved(context, progress: context.channel.isWritable) }
        context.fireChannelWritabilityChanged()
    }

    func write(context: ChannelHandlerContext, data: NIOAny, promise: EventLoopPromise<Void>?) {
        // An end without a head (the answer to a head that could not be parsed) leaves nothing in flight.
        guard case .end = unwrapOutboundIn(data), !removed else {
            context.write(data, promise: promise)
            return
        }
        inFlight = max(0, inFlight - 1)
        unsentEnds += 1
        let written = promise ?? context.eventLoop.makePromise()
        context.write(data, promise: written)
        let loopBound = NIOLoopBound((handler: self, context: context), eventLoop: context.eventLoop)
        written.futureResult.whenComplete { _ in
            let (handler, context) = loopBound.value
            guard !handler.removed else { return }
            handler.unsentEnds -= 1
            if handler.closeWhenWritten, handler.unsentEnds == 0 {
                handler.closeWhenWritten = false
                return context.close(promise: nil)
            }
            handler.outputMoved(context, progress: true)
        }
    }

    /// Holds a close asked for while an answer's end is still to be written out (Hummingbird's idle timeout, or
    /// the close after a `Connection: close` answer, would otherwise drop the rest of the answer and end it with a
    /// FIN, as if whole) until the answers are out; the close's promise completes when the channel closes. Nothing
    /// more is read meanwhile, and the write timeout still resets a client that stops reading. Closes forced by the
    /// limits (displacement, the end of a graceful shutdown) and resets go through at once.
    func close(context: ChannelHandlerContext, mode: CloseMode, promise: EventLoopPromise<Void>?) {
        guard mode == .all, unsentEnds > 0, !removed, !(slot?.closeIsForced ?? true), context.channel.isActive else {
            return context.close(mode: mode, promise: promise)
        }
        promise.map { context.channel.closeFuture.cascade(to: $0) }
        guard !closeWhenWritten else { return }
        closeWhenWritten = true
        _ = context.channel.setOption(ChannelOptions.autoRead, value: false)
    }

    func flush(context: ChannelHandlerContext) {
        context.flush()
        // Usually every answer is written out within the flush; what is left waits for the client.
        if unsentEnds > 0, stuck == nil, !removed { outputMoved(context, progress: false) }
    }

    // MARK: - Waiting

    /// Records a change of the output: while it is stuck, the client waits to read from its last `progress` (or
    /// from now, when it just got stuck); once it is all out, a request head is awaited from now on when no
    /// request is in flight.
    private func outputMoved(_ context: ChannelHandlerContext, progress: Bool) {
        // Writes failed by a closing channel are no progress, and a closing connection waits for nothing.
        guard context.channel.isActive else { return }
        guard unsentEnds == 0, context.channel.isWritable else {
            let buffered = bufferedBytes(context)
            if let stuck, !progress {
                // More output queued behind the stuck output is no progress; the client's reading is measured from it.
                self.stuck?.buffered = max(stuck.buffered, buffered)
                return
            }
            let now = NIODeadline.now()
            stuck = (now, buffered, bytesAcknowledged(context))
            slot?.startWaiting(toRead: true)
            arm(at: now + min(Self.progressInterval, limits.writeTimeout), context)
            return
        }
        stuck = nil
        if inFlight == 0 {
            awaitHead(context)
        } else {
            slot?.stopWaiting()
        }
    }

    /// Awaits a request head from now on.
    private func awaitHead(_ context: ChannelHandlerContext) {
        slot?.startWaiting()
        let due = NIODeadline.now() + limits.headerTimeout
        headDeadline = due
        arm(at: due, context)
    }

    /// Bytes written to the channel and not yet to its socket.
    private func bufferedBytes(_ context: ChannelHandlerContext) -> Int {
        (try? context.channel.syncOptions?.getOption(ChannelOptions.bufferedWritableBytes)) ?? 0
    }

    /// Bytes of output the client's kernel has acknowledged: Linux's `tcpi_bytes_acked` (4.1 and later), which
    /// grows as the client reads and its window reopens; 0 where it cannot be read. On the event loop, the option is
    /// read at once.
    private func bytesAcknowledged(_ context: ChannelHandlerContext) -> UInt64 {
        #if os(Linux)
        guard let socket = context.channel as? any SocketOptionProvider else { return 0 }
        // The first 256 bytes of `struct tcp_info`; `tcpi_bytes_acked` is the 64-bit count at byte 120.
        let info: EventLoopFuture<SIMD32<UInt64>> = socket.unsafeGetSocketOption(level: .tcp, name: .tcp_info)
        var acknowledged: UInt64 = 0
        info.assumeIsolated().whenSuccess { acknowledged = $0[15] }
        return acknowledged
        #else
        return 0
        #endif
    }

    // MARK: - Deadlines

    /// Makes sure the check runs no later than `due`: keeps a pending timer that fires earlier (it finds the later
    /// deadline then and waits on), replaces one that fires later.
    private func arm(at due: NIODeadline, _ context: ChannelHandlerContext) {
        if let timer {
            guard timer.due > due else { return }
            timer.task.cancel()
        }
        let loopBound = NIOLoopBound((handler: self, context: context), eventLoop: context.eventLoop)
        let task = context.eventLoop.scheduleTask(deadline: due) {
            loopBound.value.handler.check(loopBound.value.context)
        }
        timer = (task, due)
    }

    /// Resets the connection when its stuck output has not moved for the write timeout, closes it when the
    /// awaited head is overdue; otherwise checks again at the next deadline (stuck output every
    /// ``progressInterval``).
    private func check(_ context: ChannelHandlerContext) {
        timer = nil
        guard !removed, context.channel.isActive else { return }
        let now = NIODeadline.now()
        var next = headDeadline
        if let stuck {
            let buffered = bufferedBytes(context), acknowledged = bytesAcknowledged(context)
            if buffered < stuck.buffered || acknowledged > stuck.acknowledged {
                self.stuck = (now, buffered, acknowledged)
                slot?.startWaiting(toRead: true)
            } else if stuck.since + limits.writeTimeout <= now {
                return reset(context)
            } else {
                self.stuck?.buffered = buffered
            }
            let since = self.stuck?.since ?? now
            let probe = min(now + Self.progressInterval, since + limits.writeTimeout)
            next = min(next ?? probe, probe)
        }
        if let headDeadline, headDeadline <= now {
            context.close(promise: nil)
        } else if let next {
            arm(at: next, context)
        }
    }

    /// Counts and resets the connection: the answers its client did not read are dropped from the kernel's
    /// buffers too, not kept for an orderly close.
    private func reset(_ context: ChannelHandlerContext) {
        limits.metrics?.connectionWriteTimedOut()
        // Through the slot, so the close is forced and not held for the output it drops.
        if let slot { slot.end(reset: true) } else { ConnectionSlot.reset(context.channel) }
    }
}

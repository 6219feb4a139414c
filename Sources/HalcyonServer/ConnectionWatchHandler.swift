import NIOCore
import NIOHTTPTypes

/// Watches one connection for ``ConnectionLimits``: counts it in (or closes
/// it at once when the cap is reached and no connection can make room),
/// records while it waits for a request head, closes it when a head does not
/// arrive in time, records a client's end of input, and counts it out when it
/// closes.
///
/// A connection waits from its start, and again once no request is in
/// flight on it and its last answer has been written out (a pipelined
/// request or a slow reader is not waiting); it stops when a request head has
/// been decoded. One timer at a time checks the head's deadline: a written
/// answer moves the deadline and a head clears it, so a busy keep-alive
/// connection schedules a timer once per timeout, not once per request, and
/// no lock is taken per request.
final class ConnectionWatchHandler: ChannelDuplexHandler, RemovableChannelHandler {
    typealias InboundIn = HTTPRequestPart
    typealias OutboundIn = HTTPResponsePart

    private let limits: ConnectionLimits
    /// The connection's place in the limits; nil when it was not counted in, or once it has left.
    private var slot: ConnectionSlot?
    /// Requests whose head was read and whose answer's end has not been written yet.
    private var inFlight = 0
    private var timer: Scheduled<Void>?
    /// When the awaited request head is due; nil while none is awaited.
    private var deadline: NIODeadline?
    /// Taken out of the pipeline: written answers no longer arm a timer.
    private var removed = false

    init(limits: ConnectionLimits) { self.limits = limits }

    func handlerAdded(context: ChannelHandlerContext) {
        slot = limits.enter(context.channel)
        if slot == nil {
            context.close(promise: nil)
            return
        }
        armHeaderTimer(context)
    }

    func handlerRemoved(context: ChannelHandlerContext) {
        removed = true
        deadline = nil
        timer?.cancel()
        timer = nil
        if let slot {
            self.slot = nil
            limits.leave(slot)
        }
        limits.markHungUp(context.channel, false)
    }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        if case .head = unwrapInboundIn(data) {
            inFlight += 1
            if inFlight == 1 {
                slot?.stopWaiting()
                deadline = nil
            }
        }
        context.fireChannelRead(data)
    }

    func userInboundEventTriggered(context: ChannelHandlerContext, event: Any) {
        if case ChannelEvent.inputClosed = event { limits.markHungUp(context.channel, true) }
        context.fireUserInboundEventTriggered(event)
    }

    func write(context: ChannelHandlerContext, data: NIOAny, promise: EventLoopPromise<Void>?) {
        // An end without a head (the answer to a head that could not be parsed) leaves nothing in flight.
        guard case .end = unwrapOutboundIn(data), !removed else {
            context.write(data, promise: promise)
            return
        }
        inFlight = max(0, inFlight - 1)
        guard inFlight == 0 else {
            context.write(data, promise: promise)
            return
        }
        let written = promise ?? context.eventLoop.makePromise()
        context.write(data, promise: written)
        let loopBound = NIOLoopBound((handler: self, context: context), eventLoop: context.eventLoop)
        written.futureResult.whenSuccess {
            // Still nothing in flight once the answer is out (no pipelined head arrived meanwhile).
            let (handler, context) = loopBound.value
            guard handler.inFlight == 0, !handler.removed else { return }
            handler.slot?.startWaiting()
            handler.armHeaderTimer(context)
        }
    }

    // MARK: - Header deadline

    /// Awaits a request head from now on; schedules the check unless one is pending (it fires no later than this deadline).
    private func armHeaderTimer(_ context: ChannelHandlerContext) {
        let due = NIODeadline.now() + limits.headerTimeout
        deadline = due
        if timer == nil { schedule(at: due, context) }
    }

    private func schedule(at due: NIODeadline, _ context: ChannelHandlerContext) {
        let loopBound = NIOLoopBound((handler: self, context: context), eventLoop: context.eventLoop)
        timer = context.eventLoop.scheduleTask(deadline: due) {
            loopBound.value.handler.check(loopBound.value.context)
        }
    }

    /// Closes the connection when the awaited head is overdue; checks again at a later deadline.
    private func check(_ context: ChannelHandlerContext) {
        timer = nil
        guard let deadline else { return }
        if deadline <= .now() {
            context.close(promise: nil)
        } else {
            schedule(at: deadline, context)
        }
    }
}

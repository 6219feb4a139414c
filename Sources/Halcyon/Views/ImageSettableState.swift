import Foundation

/// What Halcyon keeps per ``ImageSettable`` target: the current task and its helpers.
///
/// One lock guards it; task identifiers come from one process-wide counter, so
/// an older task's result can always be told from the current one's.
public final class ImageSettableState: Sendable {
    private struct Fields {
        var taskIdentifier: UInt?
        var task: RetrieveImageTask?
        var indicator: (any Indicator)?
        var indicatorType: IndicatorType = .none
        var placeholder: (any Placeholder)?
    }

    private let fields = Locked(Fields())

    /// The documented shared counter behind every task identifier.
    private static let identifiers = Locked<UInt>(0)

    /// Makes empty state for one target.
    public init() {}

    /// The identifier of the target's current task, nil when none runs.
    public var taskIdentifier: UInt? { fields.withLock { $0.taskIdentifier } }

    /// The indicator shown while loading, if any.
    public var indicator: (any Indicator)? {
        get { fields.withLock { $0.indicator } }
        set { fields.withLock { $0.indicator = newValue } }
    }

    /// The kind of indicator last set with `hc.indicatorType`.
    var indicatorType: IndicatorType {
        get { fields.withLock { $0.indicatorType } }
        set { fields.withLock { $0.indicatorType = newValue } }
    }

    /// The placeholder currently shown, if any.
    var placeholder: (any Placeholder)? {
        get { fields.withLock { $0.placeholder } }
        set { fields.withLock { $0.placeholder = newValue } }
    }

    /// Issues a new identifier and makes it the current one; cancels nothing.
    func issueIdentifier() -> UInt {
        let identifier = ImageSettableState.identifiers.withLock { counter -> UInt in
            counter &+= 1
            return counter
        }
        fields.withLock {
            $0.taskIdentifier = identifier
            $0.task = nil
        }
        return identifier
    }

    /// Records the running task, unless a newer call took over meanwhile.
    func setTask(_ task: RetrieveImageTask?, for identifier: UInt) {
        fields.withLock { fields in
            if fields.taskIdentifier == identifier { fields.task = task }
        }
    }

    /// Ends the task if it is still the current one; true when it was.
    func finish(_ identifier: UInt) -> Bool {
        fields.withLock { fields -> Bool in
            guard fields.taskIdentifier == identifier else { return false }
            fields.taskIdentifier = nil
            fields.task = nil
            return true
        }
    }

    /// Whether `identifier` is the current task.
    func isCurrent(_ identifier: UInt) -> Bool {
        fields.withLock { $0.taskIdentifier == identifier }
    }

    /// Cancels the current task; with `forget`, it also stops being current
    /// (its completion then reports `notCurrentSourceTask`).
    func cancelTask(forget: Bool = false) {
        let task = fields.withLock { fields -> RetrieveImageTask? in
            let task = fields.task
            if forget {
                fields.task = nil
                fields.taskIdentifier = nil
            }
            return task
        }
        task?.cancel()
    }
}

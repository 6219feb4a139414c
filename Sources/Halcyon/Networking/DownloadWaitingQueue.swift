/// The downloads waiting for a slot: highest priority first; equal priorities in
/// submission order, or newest first when `lifo` is set.
///
/// A binary heap with lazy removal, so a mass submission costs O(n log n)
/// rather than a scan of the whole list per start: changing a priority pushes a
/// fresh entry and leaves the old one to be skipped, removing a task only
/// forgets it. Entries that no longer match are dropped when they reach the top,
/// and the heap is rebuilt when they outnumber the live ones. Not thread-safe:
/// the downloader keeps it inside its lock.
struct DownloadWaitingQueue {
    private struct Entry {
        let task: SessionDataTask
        let priority: Float
        let sequence: UInt64
    }

    private var heap: [Entry] = []
    /// The live entry of every waiting task.
    private var live: [ObjectIdentifier: Entry] = [:]
    private var nextSequence: UInt64 = 0
    /// Whether equal priorities start newest first.
    private(set) var lifo = false

    /// Whether no task waits.
    var isEmpty: Bool { live.isEmpty }

    /// How many tasks wait.
    var count: Int { live.count }

    /// Queues `task` behind the tasks of its priority (or ahead of them with `lifo`).
    mutating func append(_ task: SessionDataTask, priority: Float) {
        let entry = Entry(task: task, priority: priority, sequence: nextSequence)
        nextSequence += 1
        live[ObjectIdentifier(task)] = entry
        push(entry)
    }

    /// Gives a waiting task a new priority, keeping its place among equals; nothing when it does not wait.
    mutating func setPriority(_ priority: Float, for task: SessionDataTask) {
        guard let old = live[ObjectIdentifier(task)], old.priority != priority else { return }
        let entry = Entry(task: task, priority: priority, sequence: old.sequence)
        live[ObjectIdentifier(task)] = entry
        push(entry)
        compactIfStale()
    }

    /// Forgets a waiting task.
    mutating func remove(_ task: SessionDataTask) {
        live[ObjectIdentifier(task)] = nil
        compactIfStale()
    }

    /// Sets how equal priorities are ordered, reordering what waits.
    mutating func setLIFO(_ lifo: Bool) {
        guard lifo != self.lifo else { return }
        self.lifo = lifo
        rebuild()
    }

    /// Takes the task that starts next, or nil when none waits.
    mutating func popFirst() -> SessionDataTask? {
        while let top = heap.first {
            removeTop()
            let id = ObjectIdentifier(top.task)
            guard let current = live[id], current.sequence == top.sequence, current.priority == top.priority else { continue }
            live[id] = nil
            return top.task
        }
        return nil
    }

    // MARK: - Heap

    /// Whether the entry at `a` starts before the one at `b`; reads their fields in place (no entry is copied, no task retained).
    private func precedes(_ a: Int, _ b: Int) -> Bool {
        let (priorityA, priorityB) = (heap[a].priority, heap[b].priority)
        if priorityA != priorityB { return priorityA > priorityB }
        let (sequenceA, sequenceB) = (heap[a].sequence, heap[b].sequence)
        return lifo ? sequenceA > sequenceB : sequenceA < sequenceB
    }

    private mutating func push(_ entry: Entry) {
        heap.append(entry)
        var child = heap.count - 1
        while child > 0 {
            let parent = (child - 1) / 2
            guard precedes(child, parent) else { break }
            heap.swapAt(child, parent)
            child = parent
        }
    }

    private mutating func removeTop() {
        let last = heap.removeLast()
        guard !heap.isEmpty else { return }
        heap[0] = last
        siftDown(from: 0)
    }

    private mutating func siftDown(from index: Int) {
        var parent = index
        while true {
            let left = 2 * parent + 1, right = left + 1
            var first = parent
            if left < heap.count, precedes(left, first) { first = left }
            if right < heap.count, precedes(right, first) { first = right }
            guard first != parent else { return }
            heap.swapAt(parent, first)
            parent = first
        }
    }

    /// Rebuilds the heap from the live entries once stale ones outnumber them.
    private mutating func compactIfStale() {
        if heap.count > 2 * live.count + 64 { rebuild() }
    }

    private mutating func rebuild() {
        heap = Array(live.values)
        for index in stride(from: heap.count / 2 - 1, through: 0, by: -1) {
            siftDown(from: index)
        }
    }
}

/// The waiting requests that free slots made ready, in the order they start; holding one (the usual case) allocates nothing.
struct ReadyTasks {
    /// The first, which a worker that freed its slot may run itself.
    private(set) var first: SessionDataTask?
    /// The others, in order.
    private(set) var others: [SessionDataTask] = []

    mutating func append(_ task: SessionDataTask) {
        if first == nil { first = task } else { others.append(task) }
    }

    /// Calls `body` with each, in order.
    func forEach(_ body: (SessionDataTask) -> Void) {
        first.map(body)
        others.forEach(body)
    }
}

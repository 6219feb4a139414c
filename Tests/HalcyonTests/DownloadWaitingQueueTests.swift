import Foundation
@testable import Halcyon
import Testing

/// The downloader's waiting queue against the plain scan it replaced (highest priority first, ties by submission order
/// or newest first), over random submissions, priority changes, removals and order switches.
@Suite("Download waiting queue")
struct DownloadWaitingQueueTests {
    static func task(_ index: Int) -> SessionDataTask {
        SessionDataTask(request: ImageDownloadRequest(url: URL(string: "http://127.0.0.1/\(index)")!), redirectHandler: nil, owner: nil)
    }

    /// The reference: a list in submission order, scanned whole for every start.
    struct Scan {
        var waiting: [(task: SessionDataTask, priority: Float)] = []
        var lifo = false

        mutating func popFirst() -> SessionDataTask? {
            guard !waiting.isEmpty else { return nil }
            var best = 0
            for index in waiting.indices.dropFirst() {
                let priority = waiting[index].priority
                if priority > waiting[best].priority || (priority == waiting[best].priority && lifo) { best = index }
            }
            return waiting.remove(at: best).task
        }
    }

    @Test("starts tasks in the order the scan would, whatever happens while they wait", arguments: [1, 2, 3, 4])
    func matchesTheScan(seed: UInt64) {
        var random = seed &* 6_364_136_223_846_793_005 &+ 1_442_695_040_888_963_407
        func next(_ bound: Int) -> Int {
            random = random &* 6_364_136_223_846_793_005 &+ 1_442_695_040_888_963_407
            return Int((random >> 33) % UInt64(bound))
        }
        let priorities: [Float] = [0, 0.25, 0.5, 0.75, 1]
        var queue = DownloadWaitingQueue(), scan = Scan()
        var started: [ObjectIdentifier] = [], expected: [ObjectIdentifier] = []
        for step in 0..<3000 {
            let action = next(10)
            switch scan.waiting.isEmpty && (4...6).contains(action) ? 0 : action {
            case 0...3:
                let task = Self.task(step), priority = priorities[next(priorities.count)]
                queue.append(task, priority: priority)
                scan.waiting.append((task, priority))
            case 4, 5:
                let index = next(scan.waiting.count), priority = priorities[next(priorities.count)]
                queue.setPriority(priority, for: scan.waiting[index].task)
                scan.waiting[index].priority = priority
            case 6:
                queue.remove(scan.waiting.remove(at: next(scan.waiting.count)).task)
            case 7 where next(20) == 0:
                scan.lifo.toggle()
                queue.setLIFO(scan.lifo)
            default:
                if let task = queue.popFirst() { started.append(ObjectIdentifier(task)) }
                if let task = scan.popFirst() { expected.append(ObjectIdentifier(task)) }
            }
            #expect(queue.count == scan.waiting.count)
        }
        while let task = queue.popFirst() { started.append(ObjectIdentifier(task)) }
        while let task = scan.popFirst() { expected.append(ObjectIdentifier(task)) }
        #expect(started.count > 500)
        #expect(started == expected)
        #expect(queue.isEmpty)
    }

    @Test("a task whose priority changes back and forth starts once")
    func repeatedChangesStartOnce() {
        var queue = DownloadWaitingQueue()
        let (a, b) = (Self.task(0), Self.task(1))
        queue.append(a, priority: 0.5)
        queue.append(b, priority: 0.5)
        for _ in 0..<200 {
            queue.setPriority(1, for: b)
            queue.setPriority(0.5, for: b)
        }
        #expect(queue.popFirst() === a)
        #expect(queue.popFirst() === b)
        #expect(queue.popFirst() == nil)
    }
}

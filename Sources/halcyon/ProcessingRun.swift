import Foundation
import Halcyon

/// Runs a folder's ``ProcessingJob``s at once, bounded by a job count and a memory budget.
///
/// At most `width` jobs run together (default: the cores this process may use),
/// each on a thread of its own ``WorkQueue``, never on the Swift concurrency pool.
/// A job is admitted when its estimated memory (the source's decoded pixels,
/// read from its header, plus the encoded bytes) fits beside the running ones in
/// `memoryBudget`; one job larger than the whole budget runs alone. The lines
/// are printed in input order, each as soon as every earlier job has finished.
struct ProcessingRun {
    let jobs: [ProcessingJob]
    let width: Int
    let memoryBudget: Int
    let work: @Sendable (ProcessingJob) -> Outcome

    /// What one job printed, or how it failed.
    enum Outcome: Sendable {
        case done(line: String)
        case failed(CLIFailure)
    }

    /// Runs every job; `report` sees each outcome in input order, as soon as every earlier job has finished.
    ///
    /// A job's estimate is read (from its file's header) when the job is next to start, not for the whole folder first.
    func run(report: (Outcome) -> Void) async {
        let queue = WorkQueue(name: "halcyon.process-cli", width: width)
        var estimates = [Int?](repeating: nil, count: jobs.count)
        var outcomes = [Outcome?](repeating: nil, count: jobs.count)
        var reported = 0
        await withTaskGroup(of: (Int, Outcome).self) { group in
            var next = 0, running = 0, used = 0
            while reported < jobs.count {
                while next < jobs.count, running < width {
                    let estimate = estimates[next] ?? Self.estimatedBytes(jobs[next])
                    estimates[next] = estimate
                    guard running == 0 || used + estimate <= memoryBudget else { break }
                    let job = jobs[next], index = next, work = self.work
                    group.addTask {
                        let outcome = await withCheckedContinuation { continuation in
                            queue.execute { continuation.resume(returning: work(job)) }
                        }
                        return (index, outcome)
                    }
                    (next, running, used) = (next + 1, running + 1, used + estimate)
                }
                guard let (index, outcome) = await group.next() else { break }
                (running, used) = (running - 1, used - (estimates[index] ?? 0))
                outcomes[index] = outcome
                while reported < jobs.count, let ready = outcomes[reported] {
                    report(ready)
                    reported += 1
                }
            }
        }
    }

    /// The memory a job is expected to hold at its peak: 4 bytes per source pixel plus its file's size.
    static func estimatedBytes(_ job: ProcessingJob) -> Int {
        let size = ((try? FileManager.default.attributesOfItem(atPath: job.input.path))?[.size] as? Int) ?? 0
        guard let handle = try? FileHandle(forReadingFrom: job.input) else { return size }
        defer { try? handle.close() }
        // The header is near the start in every format this reads; 256 KiB covers large EXIF blocks.
        let head = (try? handle.read(upToCount: 256 * 1024)) ?? Data()
        guard let probe = (try? ImageDecoder.probe(head)) ?? (try? ImageDecoder.probe(Data(contentsOf: job.input))) else {
            return size
        }
        return probe.width * probe.height * max(1, probe.frameCount) * 4 + size
    }

    /// The default memory budget: a quarter of physical memory, between 256 MiB and 2 GiB.
    static var defaultMemoryBudget: Int {
        let quarter = Int(min(ProcessInfo.processInfo.physicalMemory / 4, UInt64(Int.max)))
        return min(max(quarter, 256 << 20), 2 << 30)
    }
}

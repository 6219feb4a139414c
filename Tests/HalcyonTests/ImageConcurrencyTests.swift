import Foundation
import Testing
@testable import Halcyon

@Suite("Image engine under concurrency")
struct ImageConcurrencyTests {
    @Test("8 tasks decode and process 200 times in all without a crash or a wrong result")
    func concurrentDecodeAndProcess() async throws {
        let jpeg = try TestImages.encodedGradient(.jpeg(), width: 320, height: 240)
        let gif = try TestImages.animation(frames: 3, width: 40, height: 30).encoded(as: .gif)
        let processors: [any ImageProcessor] = [
            DownsamplingImageProcessor(size: CGSize(width: 64, height: 64)),
            ResizingImageProcessor(referenceSize: CGSize(width: 50, height: 50), mode: .aspectFill) |> RoundCornerImageProcessor(cornerRadius: 8),
            BlurImageProcessor(blurRadius: 1.5) |> BlackWhiteProcessor(),
            TintImageProcessor(tint: Color(red: 0, green: 0, blue: 1, alpha: 0.3)),
        ]
        let results = try await withThrowingTaskGroup(of: Int.self) { group in
            for worker in 0..<8 {
                // Each worker is a thread of its own: eight blocking workers on the cooperative pool (two threads
                // here) would hold it for the whole test, stalling every test that runs beside this one.
                group.addTask {
                    try await offThePool {
                        Result { () throws -> Int in
                            var done = 0
                            for iteration in 0..<25 {
                                let processor = processors[(worker + iteration) % processors.count]
                                let data = iteration % 3 == 0 ? gif : jpeg
                                let image = try processor.process(item: .data(data), options: defaultOptions)
                                let encoded = try image.encoded(as: iteration % 2 == 0 ? .png() : .webp())
                                let back = try ImageDecoder.decode(encoded)
                                guard back.width == image.width, back.height == image.height else { return -1 }
                                done += 1
                            }
                            return done
                        }
                    }.get()
                }
            }
            return try await group.reduce(into: [Int]()) { $0.append($1) }
        }
        #expect(results == [Int](repeating: 25, count: 8))
    }
}

import Foundation
#if canImport(Glibc)
import Glibc
#endif
import NIOCore
import Testing
@testable import Halcyon

/// How a downloaded body is gathered: the bytes in order, one buffer, and a bounded allocation ahead of them.
@Suite struct BodyAccumulatorTests {
    /// `count` deterministic bytes starting at `seed`.
    static func bytes(_ count: Int, seed: Int) -> [UInt8] {
        (0..<count).map { UInt8(truncatingIfNeeded: $0 &* 31 &+ seed) }
    }

    /// `bytes` split into chunks of `size`, each a slice of one larger buffer, as a channel read hands them out.
    static func chunks(_ bytes: [UInt8], size: Int) -> [ByteBuffer] {
        var whole = ByteBuffer(bytes: bytes)
        var parts: [ByteBuffer] = []
        while whole.readableBytes > 0, let part = whole.readSlice(length: min(size, whole.readableBytes)) { parts.append(part) }
        return parts
    }

    @Test("Chunks come out as one body, in order, with and without an announced length", arguments: [true, false])
    func chunksInOrder(announced: Bool) {
        let body = Self.bytes(70_000, seed: 3)
        var accumulator = BodyAccumulator(prefix: Data(), expectedTotal: announced ? body.count : nil)
        for chunk in Self.chunks(body, size: 8_192) { accumulator.append(chunk) }
        #expect(accumulator.count == body.count)
        #expect(accumulator.joined() == Data(body))
        let arrived = 2 * 8_192
        #expect(BodyAccumulator.capacity(arrived: arrived, expected: announced ? body.count : nil) == (announced ? body.count : 2 * arrived))
    }

    @Test("A resumed body keeps its prefix in front of the new bytes")
    func prefixFirst() {
        let prefix = Self.bytes(5_000, seed: 1), rest = Self.bytes(9_000, seed: 2)
        var accumulator = BodyAccumulator(prefix: Data(prefix), expectedTotal: prefix.count + rest.count)
        for chunk in Self.chunks(rest, size: 4_000) { accumulator.append(chunk) }
        #expect(accumulator.count == prefix.count + rest.count)
        #expect(accumulator.joined() == Data(prefix + rest))
    }

    @Test("A body in one read is that read's bytes; an empty chunk changes nothing")
    func singleChunk() {
        let body = Self.bytes(1_000, seed: 9)
        var accumulator = BodyAccumulator(prefix: Data(), expectedTotal: body.count)
        accumulator.append(ByteBuffer())
        accumulator.append(ByteBuffer(bytes: body))
        accumulator.append(ByteBuffer())
        #expect(accumulator.joined() == Data(body))
        #expect(BodyAccumulator(prefix: Data()).joined().isEmpty)
    }

    @Test("An announced length sizes the storage at most `lookahead` beyond the bytes received")
    func lengthDoesNotBuyMemory() {
        let huge = 512 * 1024 * 1024
        #expect(BodyAccumulator.capacity(arrived: 3_000, expected: huge) == 3_000 + BodyAccumulator.lookahead)
        #expect(BodyAccumulator.capacity(arrived: 3_000, expected: 2_000) == 3_000)
        var accumulator = BodyAccumulator(prefix: Data(Self.bytes(100, seed: 5)), expectedTotal: huge)
        for chunk in Self.chunks(Self.bytes(3_000, seed: 4), size: 1_000) { accumulator.append(chunk) }
        #expect(accumulator.count == 3_100)
        #expect(accumulator.joined() == Data(Self.bytes(100, seed: 5) + Self.bytes(3_000, seed: 4)))
    }

    /// The size of the heap block holding `data`'s bytes (glibc's `malloc_usable_size`, which Swift's Glibc module does not export).
    static func blockSize(_ data: Data) -> Int {
        typealias UsableSize = @convention(c) (UnsafeMutableRawPointer?) -> Int
        guard let symbol = dlsym(nil, "malloc_usable_size") else { return Int.max }
        let usableSize = unsafeBitCast(symbol, to: UsableSize.self)
        return data.withUnsafeBytes { usableSize(UnsafeMutableRawPointer(mutating: $0.baseAddress)) }
    }

    @Test("A body that does not fill what its length reserved (a partial one, kept to resume) holds only its bytes")
    func partialBodyHoldsItsBytes() {
        var partial = BodyAccumulator(prefix: Data(), expectedTotal: 64 * 1024 * 1024)
        for chunk in Self.chunks(Self.bytes(2_048, seed: 7), size: 1_024) { partial.append(chunk) }
        let kept = partial.joined()
        #expect(kept == Data(Self.bytes(2_048, seed: 7)))
        #expect(Self.blockSize(kept) < 2_048 + 4_096, "a 2 KiB partial body holds \(Self.blockSize(kept)) bytes")
        var unannounced = BodyAccumulator(prefix: Data())
        for chunk in Self.chunks(Self.bytes(300_000, seed: 8), size: 16_384) { unannounced.append(chunk) }
        #expect(Self.blockSize(unannounced.joined()) < 300_000 + 8_192)
        var complete = BodyAccumulator(prefix: Data(), expectedTotal: 300_000)
        for chunk in Self.chunks(Self.bytes(300_000, seed: 8), size: 16_384) { complete.append(chunk) }
        #expect(Self.blockSize(complete.joined()) < 300_000 + 8_192)
    }
}

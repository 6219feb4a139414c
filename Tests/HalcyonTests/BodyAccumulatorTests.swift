import Foundation
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
}

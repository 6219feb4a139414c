import Foundation
import Halcyon

/// The 6x4 image every parsed chain runs on, made once.
private let canvas: Image? = {
    var pixels: [UInt8] = []
    for index in 0..<24 {
        let level = UInt8(index * 10)
        pixels += [level, 255 - level, 90, 200]
    }
    return try? Image(rgbaPixels: pixels, width: 6, height: 4)
}()

/// libFuzzer entry point: parses arbitrary UTF-8 as a processor chain.
///
/// Parsing must return a processor or throw `invalidProcessorChain`; a
/// processor that parses must run on a tiny image without crashing (it may
/// throw a `HalcyonError`). Chains whose output would be large (wide borders,
/// big resizes) are parsed but not run, to keep each run fast.
@_cdecl("LLVMFuzzerTestOneInput")
public func fuzz(_ start: UnsafeRawPointer, _ count: Int) -> CInt {
    let text = String(decoding: UnsafeRawBufferPointer(start: start, count: count), as: UTF8.self)
    let processor: any ImageProcessor
    do {
        processor = try ProcessorChainParser.parse(text)
    } catch {
        guard case .processorError(reason: .invalidProcessorChain(_, let position, _)) = error else {
            fatalError("parse threw \(error) for \(text.debugDescription)")
        }
        // The reported position must point into the chain (or just past it).
        if position < 0 || position > text.count {
            fatalError("position \(position) outside \(text.count) characters of \(text.debugDescription)")
        }
        return 0
    }
    if processor.identifier.isEmpty && !text.allSatisfy(\.isWhitespace) {
        fatalError("empty identifier for \(text.debugDescription)")
    }
    // Re-parsing the same text gives the same identifier (cache keys depend on it).
    if let again = try? ProcessorChainParser.parse(text), again.identifier != processor.identifier {
        fatalError("identifier changed between parses of \(text.debugDescription)")
    }
    guard let canvas, isCheapToRun(text) else { return 0 }
    _ = try? processor.process(item: .image(canvas), options: HalcyonParsedOptionsInfo(nil))
    return 0
}

/// Whether no number in the chain exceeds 64, so running it stays small.
private func isCheapToRun(_ text: String) -> Bool {
    var digits = ""
    for character in text + " " {
        if character.isASCII && (character.isNumber || character == ".") {
            digits.append(character)
        } else {
            if let value = Double(digits), value > 64 { return false }
            if digits.count > 8 { return false }
            digits = ""
        }
    }
    return true
}

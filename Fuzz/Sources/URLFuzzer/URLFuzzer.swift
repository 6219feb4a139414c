import Foundation
import Halcyon
import HalcyonServer

/// A local root for `local://` sources: `inside.png`, `sub/deeper.png`, and a symlink that points outside.
private let fixture: (resolver: SourceResolver, root: String)? = {
    let base = FileManager.default.temporaryDirectory.appendingPathComponent("halcyon-url-fuzz-\(getpid())")
    let root = base.appendingPathComponent("root")
    let outside = base.appendingPathComponent("outside.png")
    do {
        try FileManager.default.createDirectory(at: root.appendingPathComponent("sub"), withIntermediateDirectories: true)
        try Data([0x89, 0x50]).write(to: root.appendingPathComponent("inside.png"))
        try Data([0x89, 0x50]).write(to: root.appendingPathComponent("sub/deeper.png"))
        try Data([0x89, 0x50]).write(to: outside)
        try? FileManager.default.createSymbolicLink(at: root.appendingPathComponent("escape.png"), withDestinationURL: outside)
    } catch {
        return nil
    }
    let resolver = SourceResolver(localRoot: root.path, allowedPrefixes: [])
    guard let realRoot = resolver.localRoot else { return nil }
    return (resolver, realRoot)
}()

private let signer = URLSigner(pairs: [URLSigner.KeyPair(key: Data("fuzz-key".utf8), salt: Data("fuzz-salt".utf8))])

/// The 6x4 image a parsed request's processor runs on.
private let canvas: Image? = {
    var pixels: [UInt8] = []
    for index in 0..<24 { pixels += [UInt8(index * 10), 90, 200, 255] }
    return try? Image(rgbaPixels: pixels, width: 6, height: 4)
}()

/// libFuzzer entry point: arbitrary UTF-8 as the path of a `halcyon serve` request.
///
/// Walks the server's request path: `ImageURLParser.parse`, the signature
/// check, `ProcessingOptions.parse` and its processor, `SourceResolver.resolve`.
/// Each step must answer or throw its typed error. Invariants: the signed
/// part is a suffix of the path; a path signed here verifies and one changed
/// byte does not; a `local://` source never resolves outside the root (the
/// root holds a symlink to a file outside); a processor of a small request runs
/// on a tiny image without crashing.
@_cdecl("LLVMFuzzerTestOneInput")
public func fuzz(_ start: UnsafeRawPointer, _ count: Int) -> CInt {
    let path = String(decoding: UnsafeRawBufferPointer(start: start, count: count), as: UTF8.self)
    let request: ImageRequestPath
    do {
        request = try ImageURLParser.parse(path)
    } catch {
        return 0
    }
    guard path.hasSuffix(request.signedPath) else {
        fatalError("signed part \(request.signedPath.debugDescription) is not a suffix of \(path.debugDescription)")
    }
    if let signature = signer.sign(request.signedPath) {
        if !signer.verify(signature: signature, path: request.signedPath) {
            fatalError("a fresh signature does not verify for \(request.signedPath.debugDescription)")
        }
        if signer.verify(signature: signature, path: request.signedPath + "x") {
            fatalError("a signature verified for a changed path \(request.signedPath.debugDescription)")
        }
    }
    _ = signer.verify(signature: request.signature, path: request.signedPath)

    if let fixture {
        do {
            let source = try fixture.resolver.resolve(request.source)
            if case .provider(let provider) = source, let file = provider.contentURL, file.isFileURL {
                let real = file.path
                if !real.hasPrefix(fixture.root + "/") || real.hasSuffix("outside.png") {
                    fatalError("\(request.source.debugDescription) resolved outside the root to \(real)")
                }
            }
        } catch {
            // A typed refusal is the expected answer for most inputs.
        }
    }

    guard let options = try? ProcessingOptions.parse(request.options, maxDimension: 4096) else { return 0 }
    let limits = ImageDecodingOptions(maxPixelCount: 1 << 20, maxFrameCount: 4)
    guard let processor = options.processor(limits: limits) else { return 0 }
    if processor.identifier.isEmpty {
        fatalError("a processor with an empty identifier for \(request.options)")
    }
    guard let canvas, options.width <= 64, options.height <= 64, (options.blur ?? 0) <= 8,
          (options.round ?? 0) <= 64 else { return 0 }
    _ = try? processor.process(item: .image(canvas), options: HalcyonParsedOptionsInfo(nil))
    return 0
}

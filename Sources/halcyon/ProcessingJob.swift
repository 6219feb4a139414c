import ArgumentParser
import Foundation
import Halcyon

/// One input file to process and where its result goes.
struct ProcessingJob {
    let input: URL
    let output: URL
    let format: ImageFormat?

    /// What one job produced, for the log line.
    struct Result {
        let width: Int
        let height: Int
        let frames: Int
        let bytes: Int
        let format: ImageFormat

        var summary: String {
            let frameText = frames > 1 ? " \(frames) frames" : ""
            return "\(width)x\(height)\(frameText) \(format.rawValue) \(bytes) bytes"
        }
    }

    /// Expands INPUT and OUTPUT into jobs; a folder input maps to a folder output.
    ///
    /// A missing input, or a folder without image files, is a ``CLIFailure`` with exit code 66.
    static func plan(input: String, output: String, format: ImageFormat?) throws -> [ProcessingJob] {
        let fileManager = FileManager.default
        var isFolder: ObjCBool = false
        guard fileManager.fileExists(atPath: input, isDirectory: &isFolder) else {
            throw CLIFailure(code: "no-input", message: "\(input): no such file or folder", exitCode: 66)
        }
        let inputURL = URL(fileURLWithPath: input)
        let outputURL = URL(fileURLWithPath: output)
        guard isFolder.boolValue else {
            var outputIsFolder: ObjCBool = false
            if fileManager.fileExists(atPath: output, isDirectory: &outputIsFolder), outputIsFolder.boolValue {
                return [ProcessingJob(input: inputURL, output: outputURL.appendingPathComponent(inputURL.lastPathComponent), format: format)]
            }
            return [ProcessingJob(input: inputURL, output: outputURL, format: format)]
        }
        let names = try fileManager.contentsOfDirectory(atPath: input).sorted()
        let images = names.filter { ImageFormat(fileExtension: ($0 as NSString).pathExtension) != nil }
        guard !images.isEmpty else {
            throw CLIFailure(code: "no-input", message: "\(input): no image files in the folder", exitCode: 66)
        }
        try fileManager.createDirectory(at: outputURL, withIntermediateDirectories: true)
        return images.map { name in
            ProcessingJob(input: inputURL.appendingPathComponent(name), output: outputURL.appendingPathComponent(name), format: format)
        }
    }

    /// Reads, processes (decoding with `strictness`), encodes and writes atomically.
    func run(processor: any ImageProcessor, quality: Int?, strictness: DecodingStrictness) throws -> Result {
        let data = try Data(contentsOf: input)
        let options = HalcyonParsedOptionsInfo([.preloadAllAnimationData, .decodingStrictness(strictness)])
        let image = try processor.process(item: .data(data), options: options)
        let sourceFormat = ImageFormat(sniffing: data)
        // Any image extension counts (out.bmp asks for BMP, which the policy turns into PNG).
        let chosen = format ?? ImageFormat(fileExtension: output.pathExtension) ?? sourceFormat
        let encoding = OutputFormat.encoding(of: image, as: chosen, quality: quality)
        var destination = output
        if ImageFormat(fileExtension: destination.pathExtension) != encoding.format {
            destination = destination.deletingPathExtension().appendingPathExtension(encoding.format.fileExtension)
        }
        let encoded = try image.encoded(as: encoding)
        try FileManager.default.createDirectory(at: destination.deletingLastPathComponent(), withIntermediateDirectories: true)
        try encoded.write(to: destination, options: .atomic)
        return Result(width: image.width, height: image.height, frames: image.frameCount, bytes: encoded.count, format: encoding.format)
    }
}

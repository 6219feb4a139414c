import Foundation
import Halcyon

/// Choosing and writing output files.
enum OutputFormat {
    /// The policy the CLI encodes with: the library's default qualities, PNG
    /// (GIF for an animation) for formats Halcyon cannot write.
    static let policy = OutputEncodingPolicy.pngFallback

    /// The writable format a bare name (`jpeg`, `jpg`, `png`, `webp`, `gif`, `avif`, `tiff`) stands for.
    static func named(_ name: String) -> ImageFormat? {
        guard !name.contains("."), !name.contains("/") else { return nil }
        return policy.format(forExtension: name)
    }

    /// The format named on the command line; usage error when Halcyon cannot write it.
    static func parse(_ name: String) throws -> ImageFormat {
        guard let format = named(name) else {
            throw CLIFailure(code: "bad-format", message: "unknown output format \"\(name)\" (use jpeg, png, webp, gif, avif or tiff)", exitCode: 64)
        }
        return format
    }

    /// The format from the output file's extension, else the image's own, else PNG (GIF for an animation).
    static func infer(path: String?, image: Image) -> ImageFormat {
        if let path, let format = policy.format(forExtension: (path as NSString).pathExtension) {
            return format
        }
        return policy.writableFormat(for: image.originalFormat, hasAlpha: image.hasAlpha, isAnimated: image.isAnimated)
    }

    /// The encoding of `image` in `format` at `quality` (1...100), else the policy's default quality.
    static func encoding(of image: Image, as format: ImageFormat, quality: Int?) -> ImageEncodingFormat {
        policy.encoding(for: image, as: format, quality: quality)
    }
}

/// Where `fetch` writes: one named file, or files in a folder.
struct OutputDestination {
    /// The file named with `-o` when there is one source and the path is not a folder.
    let explicitFile: String?
    let folder: URL

    init(path: String?, sourceCount: Int) {
        var isFolder: ObjCBool = false
        let exists = path.map { FileManager.default.fileExists(atPath: $0, isDirectory: &isFolder) } ?? false
        if let path, sourceCount == 1, !(exists && isFolder.boolValue), !path.hasSuffix("/") {
            explicitFile = path
            folder = URL(fileURLWithPath: path).deletingLastPathComponent()
        } else {
            explicitFile = nil
            folder = URL(fileURLWithPath: path ?? "halcyon-out", isDirectory: true)
        }
    }

    /// Writes `data` atomically and returns where.
    func write(_ data: Data, index: Int, source: String, format: ImageFormat) throws -> URL {
        let url: URL
        if let explicitFile {
            url = URL(fileURLWithPath: explicitFile)
        } else {
            let base = URL(string: source)?.lastPathComponent ?? (source as NSString).lastPathComponent
            let stem = (base as NSString).deletingPathExtension
            let safe = stem.isEmpty ? "image" : String(stem.map { $0.isLetter || $0.isNumber || $0 == "-" || $0 == "_" ? $0 : "_" })
            url = folder.appendingPathComponent("\(index + 1)-\(safe).\(format.fileExtension)")
        }
        do {
            try FileManager.default.createDirectory(at: url.deletingLastPathComponent(), withIntermediateDirectories: true)
            try data.write(to: url, options: .atomic)
        } catch {
            throw CLIFailure(code: "write-failed", message: "cannot write \(url.path): \(error.localizedDescription)", exitCode: 1)
        }
        return url
    }
}

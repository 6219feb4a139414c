import Foundation
import Halcyon

/// Turns a request's source text into a Halcyon ``Source``: http(s) URLs
/// (checked against the allowed prefixes) and `local://path` under the
/// configured root (no `..`, symlinks resolved with realpath and required to
/// stay under the root).
public struct SourceResolver: Sendable {
    /// Why a source is refused.
    public enum Failure: Error, Sendable, Equatable {
        /// Not a URL, or a scheme the server does not fetch.
        case invalid(String)
        /// Not under an allowed prefix.
        case notAllowed
        /// A local path that escapes the root.
        case escapesRoot
        /// A local file that does not exist.
        case notFound
    }

    /// The real path of the local root, nil when local sources are off.
    public let localRoot: String?
    /// Allowed http(s) prefixes; empty allows any.
    public let allowedPrefixes: [String]

    /// Makes a resolver; the root is resolved with realpath now.
    public init(localRoot: String?, allowedPrefixes: [String]) {
        self.localRoot = localRoot.flatMap(Self.realPath)
        self.allowedPrefixes = allowedPrefixes
    }

    /// The source for `text`.
    public func resolve(_ text: String) throws(Failure) -> Source {
        if text.hasPrefix("local://") {
            return try local(String(text.dropFirst("local://".count)))
        }
        guard let url = URL(string: text), let scheme = url.scheme?.lowercased(), scheme == "http" || scheme == "https",
              let host = url.host, !host.isEmpty else {
            throw .invalid("source must be an http(s) URL or local://path")
        }
        if !allowedPrefixes.isEmpty && !allowedPrefixes.contains(where: { text.hasPrefix($0) }) {
            throw .notAllowed
        }
        return .network(ImageResource(downloadURL: url, cacheKey: url.absoluteString))
    }

    private func local(_ relative: String) throws(Failure) -> Source {
        guard let root = localRoot else { throw .invalid("local:// sources are disabled") }
        let components = relative.split(separator: "/", omittingEmptySubsequences: true)
        guard !components.isEmpty, !components.contains(where: { $0 == ".." || $0 == "." }),
              !relative.contains("\0") else { throw .escapesRoot }
        let joined = root + "/" + components.joined(separator: "/")
        guard let real = Self.realPath(joined) else { throw .notFound }
        guard real.hasPrefix(root + "/") else { throw .escapesRoot }
        var isDirectory: ObjCBool = false
        guard FileManager.default.fileExists(atPath: real, isDirectory: &isDirectory), !isDirectory.boolValue else { throw .notFound }
        let url = URL(fileURLWithPath: real)
        return .provider(LocalFileImageDataProvider(fileURL: url, cacheKey: "local://" + String(real.dropFirst(root.count + 1))))
    }

    static func realPath(_ path: String) -> String? {
        guard let resolved = realpath(path, nil) else { return nil }
        defer { free(resolved) }
        return String(cString: resolved)
    }
}

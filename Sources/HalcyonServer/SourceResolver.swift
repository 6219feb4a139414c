import Foundation
import Halcyon
#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// Turns a request's source text into a Halcyon `Source`: http(s) URLs
/// (without userinfo, checked against the allowed sources, see
/// ``SourceAllowList``) and `local://path` under the configured root (no `..`,
/// symlinks resolved with realpath and required to stay under the root).
///
/// A local file with more than one hard link is refused: a hard link cannot be
/// told apart from the original, so a file linked more than once might be a
/// link to a file outside the root, and realpath cannot see that.
public struct SourceResolver: Sendable {
    /// Why a source is refused.
    public enum Failure: Error, Sendable, Equatable {
        /// Not a URL, or a scheme the server does not fetch.
        case invalid(String)
        /// Not under an allowed source.
        case notAllowed
        /// A local path that escapes the root.
        case escapesRoot
        /// A local file that does not exist.
        case notFound
        /// A local file with more than one hard link (it may be a link to a file outside the root).
        case hardLinked
    }

    /// The real path of the local root, nil when local sources are off.
    public let localRoot: String?
    /// Allowed http(s) sources as configured; empty allows any.
    public let allowedPrefixes: [String]
    /// The allowed sources, parsed.
    public let allowList: SourceAllowList

    /// Makes a resolver; the root is resolved with realpath now, the allowed sources are parsed.
    public init(localRoot: String?, allowedPrefixes: [String]) {
        self.localRoot = localRoot.flatMap(Self.realPath)
        self.allowedPrefixes = allowedPrefixes
        self.allowList = SourceAllowList(allowedPrefixes)
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
        guard url.user == nil, url.password == nil else { throw .invalid("source URLs must not carry userinfo") }
        guard CanonicalHost(of: url) != nil else { throw .invalid("the source host is not a valid host name") }
        guard allowList.allows(url) else { throw .notAllowed }
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
        var info = stat()
        guard stat(real, &info) == 0, (info.st_mode & S_IFMT) == S_IFREG else { throw .notFound }
        guard info.st_nlink <= 1 else { throw .hardLinked }
        let url = URL(fileURLWithPath: real)
        return .provider(LocalFileImageDataProvider(fileURL: url, cacheKey: "local://" + String(real.dropFirst(root.count + 1))))
    }

    static func realPath(_ path: String) -> String? {
        guard let resolved = realpath(path, nil) else { return nil }
        defer { free(resolved) }
        return String(cString: resolved)
    }
}

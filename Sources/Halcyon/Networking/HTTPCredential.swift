import Foundation

/// Credentials the downloader sends to a host.
///
/// Set per host with ``ImageDownloader/setCredential(_:forHost:)``; sent
/// pre-emptively as an `Authorization` header to that host only (also after
/// redirects), and never when the request already carries one.
public enum HTTPCredential: Sendable, Hashable {
    /// HTTP Basic authentication.
    case basic(username: String, password: String)
    /// A bearer token (`Authorization: Bearer <token>`).
    case bearer(token: String)

    /// The value of the `Authorization` header.
    public var authorizationHeaderValue: String {
        switch self {
        case .basic(let username, let password):
            return "Basic " + Data("\(username):\(password)".utf8).base64EncodedString()
        case .bearer(let token):
            return "Bearer \(token)"
        }
    }
}

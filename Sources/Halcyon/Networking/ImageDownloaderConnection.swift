import AsyncHTTPClient
import Foundation

/// How a connection gate lets one hop go: the client that sends it and the URL
/// put on the wire.
///
/// The URL is the one the gate vetted, for example with the host in the
/// canonical form its DNS pin was made for; the downloader sends exactly it.
public struct ImageDownloaderConnection: Sendable {
    /// The client that sends the hop; nil for the downloader's own.
    public var client: HTTPClient?
    /// The URL sent for the hop.
    public var url: URL

    /// Makes a connection for `url` through `client` (nil: the downloader's own).
    public init(client: HTTPClient?, url: URL) {
        self.client = client
        self.url = url
    }
}

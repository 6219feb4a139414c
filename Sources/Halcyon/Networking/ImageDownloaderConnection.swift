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
    /// Called once when the hop has ended: its body read, or it failed, was redirected or was cancelled.
    ///
    /// A gate that hands out clients of its own uses it to know when a client is no longer in use, for example to
    /// shut down at once a client it has stopped caching. Whoever sends a hop through a gate's connection must call
    /// it when the hop ends (the downloader does, on the task running the download); nil: nothing to tell.
    public var finished: (@Sendable () -> Void)?

    /// Makes a connection for `url` through `client` (nil: the downloader's own); `finished` as above.
    public init(client: HTTPClient?, url: URL, finished: (@Sendable () -> Void)? = nil) {
        self.client = client
        self.url = url
        self.finished = finished
    }
}

import AsyncHTTPClient
import Foundation

/// Vets every hop of a download before a connection is made, and may choose
/// the HTTP client that makes it.
///
/// ``ImageDownloader`` calls the gate for the first request and for each
/// redirect target. Throwing refuses the hop (nothing is sent); returning a
/// client sends the hop through it (for example one whose
/// `dnsOverride` pins the host to an address the gate has checked); returning
/// nil uses the downloader's own client. An SSRF guard is the intended user.
public protocol ImageDownloaderConnectionGate: Sendable {
    /// The client for a request to `url`, nil for the downloader's own; throws to refuse the hop.
    func client(for url: URL) async throws(HalcyonError) -> HTTPClient?
}

import AsyncHTTPClient
import Foundation

/// Vets every hop of a download before a connection is made, and chooses the
/// HTTP client that makes it and the URL it sends.
///
/// ``ImageDownloader`` calls the gate for the first request and for each
/// redirect target. Throwing refuses the hop (nothing is sent). Otherwise the
/// hop is sent to the returned ``ImageDownloaderConnection/url`` (which may be
/// a canonical spelling of the asked URL, for example with the host lower-cased,
/// so what was vetted is what is sent) through its client (for example one
/// whose `dnsOverride` pins that host to an address the gate has checked), or
/// through the downloader's own client when that is nil; when the hop has ended
/// the downloader calls its ``ImageDownloaderConnection/finished``. An SSRF
/// guard is the intended user.
public protocol ImageDownloaderConnectionGate: Sendable {
    /// The client and URL for a request to `url`; throws to refuse the hop.
    func connection(for url: URL) async throws(HalcyonError) -> ImageDownloaderConnection
}

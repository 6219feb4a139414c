import Halcyon

extension Source {
    /// Whether the source is fetched from elsewhere (an http(s) URL): such sources go through the SSRF gate, their
    /// download time is measured and their results are stored; a local file or a provider is not.
    var isRemote: Bool { url.map { !$0.isFileURL } ?? false }
}

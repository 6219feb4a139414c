import Foundation

/// Adds `If-None-Match` / `If-Modified-Since` from a cached response's validators
/// after the caller's own request modifier.
struct ConditionalRequestModifier: AsyncImageDownloadRequestModifier {
    let base: (any AsyncImageDownloadRequestModifier)?
    let validators: CacheValidators

    func modified(for request: ImageDownloadRequest) async -> ImageDownloadRequest? {
        var request = request
        if let base {
            guard let changed = await base.modified(for: request) else { return nil }
            request = changed
        }
        if let etag = validators.etag {
            request.setValue(etag, forHTTPHeaderField: "If-None-Match")
        }
        if let lastModified = validators.lastModified {
            request.setValue(lastModified, forHTTPHeaderField: "If-Modified-Since")
        }
        return request
    }
}

import Foundation

// MARK: - imgproxy's environment names

extension ServerConfiguration {
    /// imgproxy's settings that have a Halcyon equivalent: an operator's existing environment works.
    ///
    /// `HALCYON_*` wins when both are set. `IMGPROXY_MAX_SRC_FILE_SIZE=0` (imgproxy's "no limit")
    /// is ignored: Halcyon always has a source size limit. `IMGPROXY_QUALITY` has no equivalent yet
    /// (the default quality is the format's).
    static let imgproxyAliases: [(imgproxy: String, halcyon: String)] = [
        ("IMGPROXY_KEY", "HALCYON_KEY"),
        ("IMGPROXY_SALT", "HALCYON_SALT"),
        ("IMGPROXY_TTL", "HALCYON_CACHE_MAX_AGE"),
        ("IMGPROXY_MAX_SRC_RESOLUTION", "HALCYON_MAX_SOURCE_MEGAPIXELS"),
        ("IMGPROXY_MAX_SRC_FILE_SIZE", "HALCYON_MAX_SOURCE_BYTES"),
        ("IMGPROXY_MAX_ANIMATION_FRAMES", "HALCYON_MAX_FRAMES"),
        ("IMGPROXY_WORKERS", "HALCYON_MAX_IN_FLIGHT"),
        ("IMGPROXY_FALLBACK_IMAGE_PATH", "HALCYON_FALLBACK_IMAGE"),
    ]

    /// `environment` with each imgproxy alias copied to its `HALCYON_*` name where that is unset.
    static func withImgproxyAliases(_ environment: [String: String]) -> [String: String] {
        var merged = environment
        for (imgproxy, halcyon) in imgproxyAliases where merged[halcyon] == nil {
            guard let value = environment[imgproxy] else { continue }
            if imgproxy == "IMGPROXY_MAX_SRC_FILE_SIZE" && value == "0" { continue }
            merged[halcyon] = value
        }
        return merged
    }
}

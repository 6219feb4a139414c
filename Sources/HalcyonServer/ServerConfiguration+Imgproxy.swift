import Foundation

// MARK: - imgproxy's environment names

extension ServerConfiguration {
    /// imgproxy's settings that have a Halcyon equivalent: an operator's existing environment works.
    ///
    /// `HALCYON_*` wins when both are set. `IMGPROXY_MAX_SRC_FILE_SIZE=0` (imgproxy's "no limit")
    /// is ignored: Halcyon always has a source size limit. `IMGPROXY_PRESETS` is a comma-separated
    /// list of `name=options`, as Halcyon's.
    static let imgproxyAliases: [(imgproxy: String, halcyon: String)] = [
        ("IMGPROXY_KEY", "HALCYON_KEY"),
        ("IMGPROXY_SALT", "HALCYON_SALT"),
        ("IMGPROXY_TTL", "HALCYON_CACHE_MAX_AGE"),
        ("IMGPROXY_MAX_SRC_RESOLUTION", "HALCYON_MAX_SOURCE_MEGAPIXELS"),
        ("IMGPROXY_MAX_SRC_FILE_SIZE", "HALCYON_MAX_SOURCE_BYTES"),
        ("IMGPROXY_MAX_ANIMATION_FRAMES", "HALCYON_MAX_ANIMATION_FRAMES"),
        ("IMGPROXY_WORKERS", "HALCYON_MAX_IN_FLIGHT"),
        ("IMGPROXY_FALLBACK_IMAGE_PATH", "HALCYON_FALLBACK_IMAGE"),
        ("IMGPROXY_WATERMARK_PATH", "HALCYON_WATERMARK_PATH"),
        ("IMGPROXY_PRESETS", "HALCYON_PRESETS"),
        ("IMGPROXY_ONLY_PRESETS", "HALCYON_ONLY_PRESETS"),
        ("IMGPROXY_STRIP_METADATA", "HALCYON_STRIP_METADATA"),
        ("IMGPROXY_KEEP_COPYRIGHT", "HALCYON_KEEP_COPYRIGHT"),
        ("IMGPROXY_STRIP_COLOR_PROFILE", "HALCYON_STRIP_COLOR_PROFILE"),
        ("IMGPROXY_QUALITY", "HALCYON_QUALITY"),
    ]

    /// ``presets`` parsed: option segments by name; an error names the bad entry.
    func presetTable() throws(ConfigurationError) -> ProcessingOptions.Presets {
        var named: [String: [String]] = [:]
        for entry in presets {
            guard let equals = entry.firstIndex(of: "="), !entry[..<equals].isEmpty else {
                throw ConfigurationError(message: "preset \"\(entry)\" must be name=options")
            }
            let body = entry[entry.index(after: equals)...].split(separator: "/").map(String.init)
            named[String(entry[..<equals])] = body
        }
        do {
            for body in named.values { _ = try ProcessingOptions.parse(body, maxDimension: maxResultDimension, presets: .init(named: named)) }
        } catch {
            throw ConfigurationError(message: "preset option \"\(error.option)\": \(error.message)")
        }
        return ProcessingOptions.Presets(named: named, onlyPresets: onlyPresets)
    }

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

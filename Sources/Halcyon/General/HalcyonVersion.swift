import CHalcyonVips

/// Version strings of Halcyon and of the libvips it runs on.
public enum HalcyonVersion {
    /// Halcyon's version.
    public static let string = "0.1.0"

    /// The libvips version this process runs, e.g. `8.14.1`.
    public static var libvips: String {
        (try? VipsRuntime.ensureStarted()) == nil ? "unavailable" : String(cString: hc_version_string())
    }
}

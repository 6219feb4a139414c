/// Version strings of Halcyon and of the libvips it runs on.
public enum HalcyonVersion {
    /// Halcyon's version.
    public static let string = "0.1.0"

    /// The libvips version this process runs, e.g. `8.14.1`.
    public static var libvips: String {
        VipsRuntime.version ?? "unavailable"
    }
}

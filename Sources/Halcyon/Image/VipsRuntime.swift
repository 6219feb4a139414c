import CHalcyonVips

/// The process-wide libvips start-up and error reading.
///
/// libvips is started once, on first use, from whichever thread gets there
/// first (`pthread_once` in the shim), with its operation cache off and its
/// untrusted loaders blocked. Every call into libvips goes through
/// ``VipsImageRef``, which calls ``ensureStarted()`` first.
enum VipsRuntime {
    /// Starts libvips if it has not been started; throws when it cannot start.
    static func ensureStarted() throws(HalcyonError) {
        if hc_init() != 0 {
            throw .processorError(reason: .engineUnavailable(message: takeErrorMessage()))
        }
    }

    /// Reads and clears libvips' error buffer; call right after the failing call.
    static func takeErrorMessage() -> String {
        guard let buffer = hc_error_copy() else { return "libvips reported no reason" }
        defer { hc_free(buffer) }
        let message = String(cString: buffer).trimmingCharacters(in: .whitespacesAndNewlines)
        return message.isEmpty ? "libvips reported no reason" : message
    }

    /// The running libvips' version (e.g. `8.14.1`), or nil when it cannot start.
    static var version: String? {
        (try? ensureStarted()) == nil ? nil : String(cString: hc_version_string())
    }

    /// Whether this libvips build can run the named operation (e.g. `heifsave_buffer`).
    static func hasOperation(_ name: String) -> Bool {
        (try? ensureStarted()) != nil && hc_has_operation(name) == 1
    }
}

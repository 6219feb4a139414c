import CHalcyonVips
import Foundation
import Logging

/// The process-wide libvips start-up, error reading and log routing.
///
/// libvips is started once, on first use, from whichever thread gets there
/// first (`pthread_once` in the shim), with its operation cache off and its
/// untrusted loaders blocked. Every call into libvips goes through
/// ``VipsImageRef``, which calls ``ensureStarted()`` first.
///
/// libvips' own log lines (GLib's "VIPS" domain: `VIPS-WARNING **: read gave
/// 2 warnings`, libtiff and libpng warnings) never reach stderr: the shim's
/// GLib handler hands them to ``logger`` at debug level.
package enum VipsRuntime {
    /// What ``takeErrorMessage()`` returns when libvips' error buffer is empty.
    static let noReason = "libvips reported no reason"

    /// Where libvips' log messages go: label `halcyon.vips`, always at debug level.
    static let logger = Logger(label: "halcyon.vips")

    /// Points the shim's GLib log handler at ``forward(level:message:)``; once, before libvips starts.
    private static let logSinkInstalled: Void = {
        hc_set_log_sink { level, message in
            VipsRuntime.forward(level: level, message: message)
        }
    }()

    /// Whether libvips' orc vector code stays on: `HALCYON_VIPS_VECTOR=1` in the environment, read once, when libvips
    /// starts. For benchmarks only: the orc 0.4.33 of Debian 12 crashes with concurrent pipelines, so it is off by default.
    static let vectorPathsRequested = ProcessInfo.processInfo.environment["HALCYON_VIPS_VECTOR"] == "1"

    /// Starts libvips if it has not been started; throws when it cannot start.
    static func ensureStarted() throws(HalcyonError) {
        _ = logSinkInstalled
        if hc_init(vectorPathsRequested ? 1 : 0) != 0 {
            throw .processorError(reason: .engineUnavailable(message: takeErrorMessage()))
        }
        _ = usedModulesLoaded
    }

    // MARK: - Modules

    /// libvips' loadable modules Halcyon decodes or encodes with, by an operation each registers:
    /// HEIF (AVIF and HEIC). The others (ImageMagick, PDF, OpenSlide: blocked as untrusted; JPEG XL:
    /// a format Halcyon does not take) are never used.
    static let usedModules = [(module: "vips-heif", operation: "heifload_buffer")]

    /// Loads, once, each of ``usedModules`` libvips did not load at start-up (see ``startWithoutUnusedModules()``).
    private static let usedModulesLoaded: Void = {
        for (module, operation) in usedModules where hc_has_operation(operation) != 1 {
            if hc_load_module(module) != 0 {
                // Read now: the log message is built only at debug level, and the buffer must be cleared anyway.
                let reason = takeErrorMessage()
                logger.debug("libvips module not loaded: \(reason)")
            }
        }
    }()

    /// Makes libvips start without its loadable modules; Halcyon then loads the ones it uses itself.
    ///
    /// libvips loads every module in its `vips-modules` folder when it starts (ImageMagick and
    /// poppler with their libraries): about 35 ms of CPU, most of a short command's time, and
    /// memory in a server, for loaders Halcyon blocks or never calls. This points `VIPSHOME` at a
    /// folder that does not exist, so libvips finds no modules (a `VIPSHOME` already set is left
    /// alone). Call it first thing in an executable's `main`, before libvips starts and before any
    /// other thread runs: it sets an environment variable.
    package static func startWithoutUnusedModules() {
        guard getenv("VIPSHOME") == nil else { return }
        setenv("VIPSHOME", "/nonexistent/halcyon-loads-its-vips-modules", 0)
    }

    /// Reads and clears libvips' error buffer; call right after the failing call.
    static func takeErrorMessage() -> String {
        takeErrorMessageIfAny() ?? noReason
    }

    /// Reads and clears libvips' error buffer; nil when libvips left no reason.
    static func takeErrorMessageIfAny() -> String? {
        guard let buffer = hc_error_copy() else { return nil }
        defer { hc_free(buffer) }
        let message = String(cString: buffer).trimmingCharacters(in: .whitespacesAndNewlines)
        return message.isEmpty ? nil : message
    }

    /// Sends one libvips log message to ``logger``; called by the shim on any thread.
    private static func forward(level: Int32, message: UnsafePointer<CChar>?) {
        guard let message else { return }
        let text = String(cString: message).trimmingCharacters(in: .whitespacesAndNewlines)
        guard !text.isEmpty else { return }
        logger.debug("\(text)", metadata: ["glib-level": "\(glibLevelName(level))"])
    }

    /// GLib's name for a log level bit (`G_LOG_LEVEL_WARNING` is 1 << 4, ...).
    private static func glibLevelName(_ level: Int32) -> String {
        switch level {
        case 1 << 4: return "warning"
        case 1 << 5: return "message"
        case 1 << 6: return "info"
        case 1 << 7: return "debug"
        default: return "level-\(level)"
        }
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

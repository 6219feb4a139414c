import CoreMetrics
import Foundation
import Halcyon
import Prometheus

/// The service's metrics: swift-metrics handles made by a Prometheus factory
/// of this server's own registry.
///
/// No global `MetricsSystem.bootstrap` is needed, so several servers can run
/// in one process (tests) each with its own numbers. Every metric name keeps
/// one set of label names, as Prometheus requires.
public final class ServerMetrics: Sendable {
    /// The registry `/metrics` renders.
    public let registry: PrometheusCollectorRegistry
    private let factory: PrometheusMetricsFactory
    private let inFlightMeter: Meter
    private let downloadTimer: CoreMetrics.Timer
    private let processingTimer: CoreMetrics.Timer
    private let totalTimer: CoreMetrics.Timer
    /// Counters by name and label values, made once: a request touches the registry's lookup only the first time.
    private let counters = Locked<[String: CoreMetrics.Counter]>([:])
    /// The counters every response cache hit touches, made up front: a hit builds no key and takes no lock for them.
    private let imageOK: CoreMetrics.Counter
    private let imageNotModified: CoreMetrics.Counter
    private let responseTier: CoreMetrics.Counter
    private let openConnections: CoreMetrics.Gauge
    private let waitingConnections: CoreMetrics.Gauge
    private let displacedConnections: CoreMetrics.Counter
    private let refusedConnections: CoreMetrics.Counter
    private let writeTimedOutConnections: CoreMetrics.Counter

    /// Makes metrics on a fresh registry.
    public init() {
        registry = PrometheusCollectorRegistry()
        var factory = PrometheusMetricsFactory(registry: registry)
        factory.defaultDurationHistogramBuckets = [
            .milliseconds(1), .milliseconds(5), .milliseconds(10), .milliseconds(25), .milliseconds(50),
            .milliseconds(100), .milliseconds(250), .milliseconds(500), .seconds(1), .seconds(2), .seconds(5), .seconds(10),
        ]
        self.factory = factory
        inFlightMeter = Meter(label: "halcyon_requests_in_flight", factory: factory)
        downloadTimer = Timer(label: "halcyon_download_duration_seconds", factory: factory)
        processingTimer = Timer(label: "halcyon_processing_duration_seconds", factory: factory)
        totalTimer = Timer(label: "halcyon_request_duration_seconds", factory: factory)
        imageOK = Counter(label: "halcyon_requests_total", dimensions: [("route", "image"), ("status", "200")], factory: factory)
        imageNotModified = Counter(label: "halcyon_requests_total", dimensions: [("route", "image"), ("status", "304")], factory: factory)
        responseTier = Counter(label: "halcyon_cache_results_total", dimensions: [("type", "response")], factory: factory)
        openConnections = CoreMetrics.Gauge(label: "halcyon_connections_open", factory: factory)
        waitingConnections = CoreMetrics.Gauge(label: "halcyon_connections_waiting", factory: factory)
        displacedConnections = Counter(label: "halcyon_connections_displaced_total", factory: factory)
        refusedConnections = Counter(label: "halcyon_connections_refused_total", factory: factory)
        writeTimedOutConnections = Counter(label: "halcyon_connections_write_timeouts_total", factory: factory)
    }

    /// Records the connections open and those waiting for a request head (set when `/metrics` is read).
    public func connections(open: Int, waiting: Int) {
        openConnections.record(open)
        waitingConnections.record(waiting)
    }

    /// Counts a connection closed at the cap to make room for a new one.
    public func connectionDisplaced() { displacedConnections.increment() }

    /// Counts a new connection closed at once because the cap was reached and none could make room.
    public func connectionRefused() { refusedConnections.increment() }

    /// Counts a connection reset because its pending output made no progress for the write timeout.
    public func connectionWriteTimedOut() { writeTimedOutConnections.increment() }

    /// Counts a finished request by route and status.
    public func request(route: String, status: Int) {
        if route == "image", status == 200 { return imageOK.increment() }
        if route == "image", status == 304 { return imageNotModified.increment() }
        counter("halcyon_requests_total", [("route", route), ("status", String(status))]).increment()
    }

    /// Counts an error by its stable code.
    public func error(code: String) {
        counter("halcyon_errors_total", [("code", code)]).increment()
    }

    /// Counts where a processed image came from: memory, disk, none (loaded), response (encoded bytes reused), or a shared tier by name (redis).
    public func cache(_ kind: String) {
        if kind == "response" { return responseTier.increment() }
        counter("halcyon_cache_results_total", [("type", kind)]).increment()
    }

    /// Counts a result computed here (decoded, processed and encoded), as opposed to one served from a cache tier.
    public func computed() {
        counter("halcyon_results_computed_total", []).increment()
    }

    /// Counts a failed call to a shared storage tier (it reads as a miss).
    public func storageError(tier: String) {
        counter("halcyon_storage_errors_total", [("tier", tier)]).increment()
    }

    /// Records the download part of a request.
    public func download(_ duration: Duration) {
        downloadTimer.recordNanoseconds(Self.nanoseconds(duration))
    }

    /// Records the processing part (decode, process, encode) of a request.
    public func processing(_ duration: Duration) {
        processingTimer.recordNanoseconds(Self.nanoseconds(duration))
    }

    /// Records a whole request.
    public func total(_ duration: Duration) {
        totalTimer.recordNanoseconds(Self.nanoseconds(duration))
    }

    /// One more request in flight.
    public func enter() { inFlightMeter.increment() }
    /// One fewer request in flight.
    public func leave() { inFlightMeter.decrement() }

    /// The Prometheus text exposition.
    public func render() -> [UInt8] { registry.emitToBuffer() }

    /// The counter `label` with `dimensions`, made on first use.
    private func counter(_ label: String, _ dimensions: [(String, String)]) -> CoreMetrics.Counter {
        var key = label
        for (name, value) in dimensions { key += "|" + name + "=" + value }
        return counters.withLock { known in
            if let found = known[key] { return found }
            let made = Counter(label: label, dimensions: dimensions, factory: factory)
            known[key] = made
            return made
        }
    }

    private static func nanoseconds(_ duration: Duration) -> Int64 {
        let parts = duration.components
        return parts.seconds * 1_000_000_000 + parts.attoseconds / 1_000_000_000
    }
}

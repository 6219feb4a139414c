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
    }

    /// Counts a finished request by route and status.
    public func request(route: String, status: Int) {
        Counter(label: "halcyon_requests_total", dimensions: [("route", route), ("status", String(status))], factory: factory).increment()
    }

    /// Counts an error by its stable code.
    public func error(code: String) {
        Counter(label: "halcyon_errors_total", dimensions: [("code", code)], factory: factory).increment()
    }

    /// Counts where a processed image came from: memory, disk, none (loaded), response (encoded bytes reused).
    public func cache(_ kind: String) {
        Counter(label: "halcyon_cache_results_total", dimensions: [("type", kind)], factory: factory).increment()
    }

    /// Records the download part of a request.
    public func download(_ duration: Duration) {
        Timer(label: "halcyon_download_duration_seconds", factory: factory).recordNanoseconds(Self.nanoseconds(duration))
    }

    /// Records the processing part (decode, process, encode) of a request.
    public func processing(_ duration: Duration) {
        Timer(label: "halcyon_processing_duration_seconds", factory: factory).recordNanoseconds(Self.nanoseconds(duration))
    }

    /// Records a whole request.
    public func total(_ duration: Duration) {
        Timer(label: "halcyon_request_duration_seconds", factory: factory).recordNanoseconds(Self.nanoseconds(duration))
    }

    /// One more request in flight.
    public func enter() { inFlightMeter.increment() }
    /// One fewer request in flight.
    public func leave() { inFlightMeter.decrement() }

    /// The Prometheus text exposition.
    public func render() -> [UInt8] { registry.emitToBuffer() }

    private static func nanoseconds(_ duration: Duration) -> Int64 {
        let parts = duration.components
        return parts.seconds * 1_000_000_000 + parts.attoseconds / 1_000_000_000
    }
}

import Foundation
import HalcyonServer
#if OpenTelemetry
import OTel
#endif
import ServiceLifecycle

/// The OpenTelemetry trace exporter of `halcyon serve`: OTLP/HTTP to the configured endpoint.
///
/// Bootstrapped only when ``ServerConfiguration/traceEndpoint`` is set; then
/// the server's spans (request, cache lookups, origin fetch, decode, process,
/// encode) are batched and exported, and the W3C trace context is read from
/// requests and sent to origins. Metrics and logs stay on Prometheus and
/// stderr. The standard `OTEL_*` variables (protocol, batch delay, sampler,
/// resource attributes) apply on top. An endpoint without a path gets
/// `/v1/traces`, as OTLP/HTTP's base endpoint does.
enum TraceExport {
    /// The exporter service to run next to the server, or nil when tracing is off.
    static func bootstrap(_ configuration: ServerConfiguration) throws -> (any Service)? {
        guard let endpoint = configuration.traceEndpoint else { return nil }
        #if OpenTelemetry
        var otel = OTel.Configuration.default
        otel.serviceName = "halcyon"
        otel.logs.enabled = false
        otel.metrics.enabled = false
        otel.traces.enabled = true
        otel.traces.exporter = .otlp
        otel.traces.otlpExporter.protocol = .httpProtobuf
        otel.traces.otlpExporter.endpoint = tracesURL(endpoint)
        return try OTel.bootstrap(configuration: otel)
        #else
        throw BuiltWithout(endpoint: endpoint)
        #endif
    }

    /// This build has no exporter (built with `--disable-default-traits`).
    struct BuiltWithout: Error, CustomStringConvertible {
        let endpoint: String
        var description: String { "this halcyon was built without the OpenTelemetry trait; cannot export to \(endpoint)" }
    }

    /// `endpoint` with `/v1/traces` when it has no path.
    static func tracesURL(_ endpoint: String) -> String {
        guard let parts = URLComponents(string: endpoint), parts.path.isEmpty || parts.path == "/" else { return endpoint }
        return endpoint.hasSuffix("/") ? endpoint + "v1/traces" : endpoint + "/v1/traces"
    }
}

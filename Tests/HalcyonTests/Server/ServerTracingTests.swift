import AsyncHTTPClient
import Foundation
import Halcyon
import NIOCore
import Testing

/// `halcyon serve` as a child process exporting traces to the test's own
/// OTLP/HTTP receiver: one span per stage, all in the caller's trace, and the
/// trace context carried on to the origin.
@Suite("Server tracing (OpenTelemetry)", .serialized)
struct ServerTracingTests {
    static func serve(_ scratch: CLIScratch, environment: [String: String]) async throws -> ServeProcess {
        try await ServeProcess.start(["serve", "--insecure", "--allow-loopback", "--host", "127.0.0.1", "--port", "0",
                                      "--cache-dir", scratch.cache.path], in: scratch.root, environment: environment)
    }

    static func get(_ url: String, headers: [(String, String)]) async throws -> Int {
        var request = HTTPClientRequest(url: url)
        for (name, value) in headers { request.headers.add(name: name, value: value) }
        let response = try await HTTPClient.shared.execute(request, timeout: .seconds(20))
        _ = try await response.body.collect(upTo: 10 << 20)
        return Int(response.status.code)
    }

    static func insecurePath(_ options: String, source: String) -> String {
        let encoded = Data(source.utf8).base64EncodedString()
            .replacingOccurrences(of: "+", with: "-").replacingOccurrences(of: "/", with: "_")
            .trimmingCharacters(in: CharacterSet(charactersIn: "="))
        return "/insecure/\(options)/\(encoded).png"
    }

    @Test("Every stage is a span in the caller's trace, exported over OTLP/HTTP; the origin gets the trace context")
    func spansPerStage() async throws {
        let receiver = try await OTLPReceiver.start()
        defer { Task { await receiver.shutdown() } }
        let origin = try await TestHTTPServer.start(image: TestImages.encodedGradient(.jpeg(), width: 300, height: 200))
        defer { Task { await origin.shutdown() } }
        let scratch = CLIScratch()
        defer { scratch.remove() }
        let serve = try await Self.serve(scratch, environment: [
            "HALCYON_TRACE_ENDPOINT": receiver.endpoint,
            "OTEL_EXPORTER_OTLP_TRACES_PROTOCOL": "http/json",
            "OTEL_BSP_SCHEDULE_DELAY": "100",
        ])
        defer { serve.terminateIfRunning() }
        let traceID = "4bf92f3577b34da6a3ce929d0e0e4736"
        let parentID = "00f067aa0ba902b7"
        let path = Self.insecurePath("rs:fit:64:64", source: origin.url("/image/traced").absoluteString)
        let status = try await Self.get("http://127.0.0.1:\(serve.port)\(path)", headers: [("traceparent", "00-\(traceID)-\(parentID)-01")])
        #expect(status == 200)

        let wanted: Set = ["halcyon.request", "halcyon.cache.lookup", "halcyon.fetch", "halcyon.decode", "halcyon.process", "halcyon.encode"]
        var inTrace: [OTLPReceiver.ReceivedSpan] = []
        for _ in 0..<100 {
            inTrace = receiver.spans.filter { $0.traceID == traceID }
            if wanted.isSubset(of: Set(inTrace.map(\.name))) { break }
            try await Task.sleep(for: .milliseconds(100))
        }
        let names = Set(inTrace.map(\.name))
        #expect(wanted.isSubset(of: names), "spans in the trace: \(names); all: \(receiver.spans.map(\.name))")
        let root = try #require(inTrace.first { $0.name == "halcyon.request" })
        #expect(root.parentSpanID == parentID, "the request span continues the caller's span")
        #expect(root.attributes["http.response.status_code"] != nil)
        #expect(!(root.attributes["url.path"] ?? "").contains("insecure"), "the signature segment is not recorded")
        for span in inTrace where span.name.hasPrefix("halcyon.") && span.name != "halcyon.request" {
            #expect(span.parentSpanID == root.spanID, "\(span.name) is a child of the request span")
        }
        let lookups = inTrace.filter { $0.name == "halcyon.cache.lookup" }.compactMap { $0.attributes["halcyon.cache.tier"] }
        #expect(lookups.contains("disk"), "\(lookups)")
        #expect(root.attributes["halcyon.cache.tier"] == "none", "the request span names where the result came from")

        // The HTTP client's span is a child of the fetch span, and the origin saw the same trace with it as parent.
        let fetch = try #require(inTrace.first { $0.name == "halcyon.fetch" })
        let client = try #require(inTrace.first { $0.parentSpanID == fetch.spanID }, "no client span under halcyon.fetch")
        let sent = origin.headers("/image/traced").first?["traceparent"] ?? ""
        #expect(sent.hasPrefix("00-\(traceID)-\(client.spanID)-"),
                "traceparent to the origin: \(sent); spans: \(inTrace.map { "\($0.name) \($0.spanID)<-\($0.parentSpanID)" })")

        // The traced server's connections end after HTTP/1.0 answers too (it has no cached-hit handler).
        let health = try await ServerKeepAliveTests.askOnce(serve.port, "GET /health HTTP/1.0\r\n\r\n")
        #expect(ServerKeepAliveTests.statusLine(health.data) == "HTTP/1.0 200 OK" && health.closed)
        #expect(await serve.stop() == 0)
    }

    @Test("Without a trace endpoint nothing is exported and origins get no trace context")
    func offByDefault() async throws {
        let origin = try await TestHTTPServer.start(image: TestImages.encodedGradient(.jpeg(), width: 100, height: 80))
        defer { Task { await origin.shutdown() } }
        let scratch = CLIScratch()
        defer { scratch.remove() }
        let serve = try await Self.serve(scratch, environment: [:])
        defer { serve.terminateIfRunning() }
        let path = Self.insecurePath("rs:fit:32:32", source: origin.url("/image/untraced").absoluteString)
        let status = try await Self.get("http://127.0.0.1:\(serve.port)\(path)",
                                        headers: [("traceparent", "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01")])
        #expect(status == 200)
        #expect(origin.headers("/image/untraced").first?["traceparent"] == nil)
        #expect(await serve.stop() == 0)
    }
}

// The server's in-memory response cache (HalcyonServer.ResponseCache) at its default 16 MiB limit, full of
// distinct answers (4 KiB each by default): what a store costs when it must evict (every miss of a busy server), what a hit
// costs among many entries, and what a hit on one hot entry costs (the cached-response benchmark's shape).
// Each row is the best of ROUNDS runs, ns per call, with the spread of all runs.
//
//   cd Benchmarks && swift run -c release ResponseCacheBenchmark
//
// Env: ROUNDS (default 7), CALLS (default 20000 stores; hits are ten times as many), BODY (bytes per
// answer, default 4096; 100 fills the cache with as many tiny answers as a flood of 1 px requests would).
import BenchmarkSupport
import Foundation
import HalcyonServer

let environment = ProcessInfo.processInfo.environment
let rounds = max(1, Int(environment["ROUNDS"] ?? "") ?? 7)
let calls = max(1, Int(environment["CALLS"] ?? "") ?? 20_000)
let limit = 16 * 1024 * 1024
let bodyBytes = max(1, Int(environment["BODY"] ?? "") ?? 4096)
let body = Data((0..<bodyBytes).map { UInt8(truncatingIfNeeded: $0 &* 31) })
let answer = ResponseCache.Entry(body: body, contentType: "image/jpeg", etag: "\"bench\"")
/// A key the shape of the server's (the path as sent and the negotiated format), distinct per index.
func key(_ index: Int) -> ResponseCache.Key {
    ResponseCache.Key(path: "/insecure/rs:fit:512:512/q:80/plain/http%3A%2F%2Forigin%2Fc\(index)%2Fs00.jpg@jpg", negotiatedFormat: .avif)
}

let cache = ResponseCache(limit: limit, lifetime: 3600)
// More answers than fit (each counts its body and more), so the cache is full and the first ones are gone.
var next = limit / body.count + 1000
for index in 0..<next { cache.store(answer, for: key(index)) }
let held = (0..<next).reduce(0) { $0 + (cache.value(for: key($1)) == nil ? 0 : 1) }
precondition(cache.value(for: key(0)) == nil && held > 0, "the cache is not full")

/// Nanoseconds per call of each run of `count` calls.
func runs(_ count: Int, _ body: (Int) -> Void) -> [Double] {
    (0..<rounds).map { _ in
        let start = DispatchTime.now().uptimeNanoseconds
        for index in 0..<count { body(index) }
        return Double(DispatchTime.now().uptimeNanoseconds - start) / Double(count)
    }
}

let stores = runs(calls) { _ in
    cache.store(answer, for: key(next))
    next += 1
}
let recent = (next - held / 2..<next).map(key)  // the newer half: surely still held
let spread = runs(calls * 10) { index in precondition(cache.value(for: recent[index % recent.count]) != nil) }
let hot = recent[recent.count - 1]
let hotHits = runs(calls * 10) { _ in precondition(cache.value(for: hot) != nil) }

func row(_ name: String, _ values: [Double]) -> String {
    String(format: "| %@ | %.0f | %.0f–%.0f |", name, values.min() ?? 0, values.min() ?? 0, values.max() ?? 0)
}
let table = """
### ResponseCacheBenchmark: the server's response cache, full (\(held) answers of \(bodyBytes) bytes in 16 MiB), best of \(rounds) runs

| call | ns per call | spread |
|---|---:|---:|
\(row("store of a new answer, evicting (\(calls) calls)", stores))
\(row("hit, spread over half the entries (\(calls * 10) calls)", spread))
\(row("hit, one hot entry (\(calls * 10) calls)", hotHits))

"""
print(table)
appendToBenchResults(table)
recordSummary(benchmark: "ResponseCacheBenchmark", comparison: "store into a full 16 MiB response cache",
              result: String(format: "%.0f ns", stores.min() ?? 0), goal: "report", met: nil)

import Foundation
@testable import Halcyon
import Testing

/// Header handling of ``ImageDownloadRequest``, ``ImageDownloadResponse`` and ``HTTPCredential``.
@Suite struct ImageDownloadRequestTests {
    @Test func headerNamesAreCaseInsensitive() {
        var request = ImageDownloadRequest(url: URL(string: "https://example.com/a.png")!)
        request.setValue("1", forHTTPHeaderField: "X-Test")
        request.setValue("2", forHTTPHeaderField: "x-test")
        #expect(request.value(forHTTPHeaderField: "X-TEST") == "2")
        #expect(request.allHTTPHeaderFields == ["x-test": "2"])
        request.setValue(nil, forHTTPHeaderField: "X-Test")
        #expect(request.value(forHTTPHeaderField: "x-test") == nil)
        #expect(request.httpMethod == "GET")
    }

    @Test func responseHeadersAreLowercasedAndLengthParsed() {
        let response = ImageDownloadResponse(
            url: URL(string: "https://example.com/a.png")!, statusCode: 200,
            headers: ["Content-Length": " 42 ", "ETag": "\"v\""])
        #expect(response.expectedContentLength == 42)
        #expect(response.value(forHTTPHeaderField: "etag") == "\"v\"")
        #expect(response.headers["etag"] == "\"v\"")
        let bad = ImageDownloadResponse(url: URL(string: "https://example.com")!, statusCode: 200, headers: ["content-length": "-1"])
        #expect(bad.expectedContentLength == nil)
    }

    @Test func credentialsMakeAuthorizationValues() {
        #expect(HTTPCredential.basic(username: "user", password: "pass").authorizationHeaderValue == "Basic dXNlcjpwYXNz")
        #expect(HTTPCredential.bearer(token: "t").authorizationHeaderValue == "Bearer t")
    }
}

/// The download path's shortcuts give the answers of the general code they skip.
@Suite struct DownloadShortcutTests {
    /// Whether `url` has an http(s) scheme (any case), a non-empty host and a port, if any, that fits 16 bits,
    /// asked through `URLComponents`.
    private func expectedFetchable(_ url: URL) -> Bool {
        guard let components = URLComponents(url: url, resolvingAgainstBaseURL: true),
              let scheme = components.scheme?.lowercased(), scheme == "http" || scheme == "https" else { return false }
        if let port = components.port, !(0...65535).contains(port) { return false }
        // A port of more digits than an Int holds: URL reads no port at all.
        if components.port == nil, url.absoluteString.contains("99999999999999999999") { return false }
        return !(components.host ?? "").isEmpty
    }

    @Test func fetchableURLsWithAndWithoutTheShortcut() throws {
        let texts = [
            "http://a/x", "https://example.com", "https://example.com?q=1", "http://127.0.0.1:8080/a.png",
            "HTTP://example.com/a", "Https://example.com", "http://user@example.com/", "http://user:pw@host/x",
            "http://[::1]:8080/a", "http://h%41st/a", "http://:80/x", "http:///x", "http:/x", "http:x",
            "ftp://example.com/a", "file:///tmp/a.png", "https://example.com#frag", "http://a.b.c.d/?#", "http://user@/x",
            "http://[::1]/", "http://%20/x",
            "http://a:65535/x", "http://a:65536/x", "http://a:99999/x", "HTTP://a:70000/x", "http://[::1]:65536/x",
            "http://a:99999999999999999999999/x", "http://[::1]:99999999999999999999999/x", "http://a:/x",
        ]
        var shortcuts = 0
        for text in texts {
            let url = try #require(URL(string: text), "\(text)")
            let expected = expectedFetchable(url)
            #expect(ImageDownloader.isFetchable(url) == expected, "\(text)")
            if ImageDownloader.hasPlainHost(url.absoluteString) {
                shortcuts += 1
                #expect(expected, "the shortcut accepted \(text)")
            }
        }
        // The usual URLs take the shortcut; the unusual ones go to the general check.
        #expect(shortcuts == 8)
        let relative = try #require(URL(string: "/b.png", relativeTo: URL(string: "https://example.com/a/")))
        #expect(ImageDownloader.isFetchable(relative))
    }

    @Test func responseNamesAreLowercasedOnlyWhenNeededAndRepeatsJoined() {
        let fields = [("content-length", "3"), ("Set-Cookie", "a=1"), ("set-cookie", "b=2"), ("X-ID", "x"), ("etag", "\"v\""), ("x-É", "e")]
        let response = ImageDownloadResponse(url: URL(string: "https://example.com")!, statusCode: 200, fields: fields)
        #expect(response.headers == ["content-length": "3", "set-cookie": "a=1, b=2", "x-id": "x", "etag": "\"v\"", "x-é": "e"])
        #expect(response.expectedContentLength == 3)
    }

    @Test func coalescingKeyIsTheURLUntilAValidatorIsSet() {
        let url = URL(string: "https://example.com/a.png")!
        var request = ImageDownloadRequest(url: url)
        #expect(request.coalescingKey == url.absoluteString)
        request.setValue("text/plain", forHTTPHeaderField: "Accept")
        let plainWithHeader = request.coalescingKey
        // A header that does not change the answer shares the plain request's download.
        #expect(plainWithHeader == url.absoluteString)
        request.setValue("", forHTTPHeaderField: "Range")
        #expect(request.coalescingKey == url.absoluteString)
        request.setValue("\"v1\"", forHTTPHeaderField: "If-None-Match")
        #expect(request.coalescingKey != plainWithHeader)
        #expect(request.coalescingKey.hasPrefix(url.absoluteString + "\n"))
    }
}

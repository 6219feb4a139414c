import Foundation
import Halcyon
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

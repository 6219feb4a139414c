import Foundation
import Tracing

/// Bytes from the network or a provider.
struct FetchedData: Sendable {
    let data: Data
    let response: ImageDownloadResponse?
    let metrics: NetworkMetrics?
}

/// What "fetch original data" gave: bytes, or the server's word that the cached copy is good.
enum FetchedDataResult: Sendable {
    case loaded(FetchedData)
    case notModified
}

/// What "fetch original image" gave: the decoded (and processed) image with its bytes, or not-modified.
enum FetchedImage: Sendable {
    struct Decoded: Sendable {
        let image: Image
        let data: FetchedData
    }

    case image(Decoded)
    case notModified
}

extension ImagePipeline {
    // MARK: - Fetch original image

    /// The bytes of `request` decoded and run through its processor, shared by equal requests.
    func fetchImage(
        _ request: PipelineRequest, validators: CacheValidators?, priority: LoadPriority
    ) async throws(HalcyonError) -> FetchedImage {
        try await Self.mapped(request) {
            try await self.fetchImageStage.value(forKey: request.imageKey(validators: validators), priority: priority) { priority in
                try await self.runFetchImage(request, validators: validators, priority: priority)
            }
        }
    }

    private func runFetchImage(
        _ request: PipelineRequest, validators: CacheValidators?, priority: LoadPriority
    ) async throws(HalcyonError) -> FetchedImage {
        let fetched: FetchedData
        switch try await fetchData(request, validators: validators, priority: priority) {
        case .notModified: return .notModified
        case .loaded(let data): fetched = data
        }
        let processor = request.processor
        let context = request.processing
        let bytes = fetched.data
        do throws(HalcyonError) {
            let image = try await runCPU(on: queues.decode, request) { () throws(HalcyonError) -> Image in
                let image = try processor.processAttributingFailure(item: .data(bytes), options: context)
                return context.backgroundDecode ? try image.decodedInMemory() : image
            }
            return .image(.init(image: image, data: fetched))
        } catch {
            if case .network(let url) = request.dataKey.origin, FailedURLBlocklist.isPermanent(error) {
                failedURLs.insert(url)
            }
            throw error
        }
    }

    // MARK: - Fetch original data

    /// The bytes of `request`'s source, shared by equal requests; conditional when `validators` are given.
    func fetchData(
        _ request: PipelineRequest, validators: CacheValidators?, priority: LoadPriority
    ) async throws(HalcyonError) -> FetchedDataResult {
        try await Self.mapped(request) {
            try await self.fetchDataStage.value(forKey: request.dataKey(validators: validators), priority: priority) { priority in
                try await self.runFetchData(request, validators: validators, priority: priority)
            }
        }
    }

    private func runFetchData(
        _ request: PipelineRequest, validators: CacheValidators?, priority: LoadPriority
    ) async throws(HalcyonError) -> FetchedDataResult {
        switch request.source {
        case .network(let resource):
            return try await download(resource.downloadURL, request, validators: validators, priority: priority)
        case .provider(let provider):
            return .loaded(FetchedData(data: try await providedData(provider), response: nil, metrics: nil))
        }
    }

    /// Loads `url` through the request's loader; keeps the failed-URL blocklist.
    private func download(
        _ url: URL, _ request: PipelineRequest, validators: CacheValidators?, priority: LoadPriority
    ) async throws(HalcyonError) -> FetchedDataResult {
        if !request.dataKey.retryFailed && failedURLs.contains(url) {
            throw .requestError(reason: .blockedURL(url: url))
        }
        let loading = DataLoadingRequest(
            url: url, requestModifier: request.requestModifier, redirectHandler: request.redirectHandler,
            progressBlock: request.progressBlock, dataReceivers: request.dataReceivers, validators: validators, priority: priority)
        // The fetch span is the current context while loading, so the HTTP client's own span (AsyncHTTPClient
        // traces with the bootstrapped tracer) is its child and sends the trace context on to the origin.
        let span = startSpan("halcyon.fetch", context: request.serviceContext, ofKind: .internal)
        defer { span.end() }
        span.attributes["server.address"] = url.host
        let outcome = await ServiceContext.withValue(span.context) { () async -> Result<DataLoadingResult, HalcyonError> in
            do throws(HalcyonError) {
                return .success(try await request.loader.loadData(loading))
            } catch {
                return .failure(error)
            }
        }
        do throws(HalcyonError) {
            let result = try outcome.get()
            failedURLs.remove(url)
            switch result {
            case .notModified:
                span.attributes["http.response.status_code"] = 304
                return .notModified
            case .loaded(let loaded):
                span.attributes["http.response.body.size"] = loaded.data.count
                return .loaded(FetchedData(data: loaded.data, response: loaded.response, metrics: loaded.metrics))
            }
        } catch {
            span.recordError(error)
            span.setStatus(SpanStatus(code: .error))
            if FailedURLBlocklist.isPermanent(error) { failedURLs.insert(url) }
            throw error
        }
    }

    private func providedData(_ provider: any ImageDataProvider) async throws(HalcyonError) -> Data {
        do {
            return try await provider.data()
        } catch let error as HalcyonError {
            throw error
        } catch is CancellationError {
            throw .requestError(reason: .taskCancelled(task: nil, token: nil))
        } catch {
            throw .imageSettingError(reason: .dataProviderError(provider: provider, error: error))
        }
    }
}

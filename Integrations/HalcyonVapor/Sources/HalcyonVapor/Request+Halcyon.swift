import Foundation
import Halcyon
import Logging
import Vapor

extension Request {
    /// Halcyon for this request: retrievals through the application's manager (`app.halcyon.manager`), logged
    /// to this request's logger.
    public var halcyon: Halcyon { Halcyon(request: self) }

    /// Retrieves images for one request through the application's `HalcyonManager`.
    public struct Halcyon: Sendable {
        /// The request the retrievals are made for.
        public let request: Request

        /// The manager retrievals go through: the application's (`app.halcyon.manager`).
        public var manager: HalcyonManager { request.application.halcyon.manager }

        /// Retrieves the image of `source` through ``manager``; throws `HalcyonError`.
        ///
        /// Runs on the calling task (the route handler's): cancelling it cancels the retrieval (a download
        /// shared with other callers goes on for them) and throws `requestError(.taskCancelled)`. `options` come
        /// after the manager's defaults and after `.callbackQueue(.untouch)` (a server runs no main queue), so
        /// the call's own win. The result is logged at debug level and a failure at info level on
        /// `request.logger`, with the source and the time taken.
        public func retrieveImage(
            with source: Source, options: HalcyonOptionsInfo? = nil
        ) async throws(HalcyonError) -> RetrieveImageResult {
            let start = ContinuousClock.now
            let logger = request.logger
            do {
                let result = try await manager.retrieveImage(
                    with: source, options: [.callbackQueue(.untouch)] + (options ?? []))
                logger.debug("halcyon retrieved an image", metadata: [
                    "halcyon.source": "\(source)", "halcyon.cache": "\(result.cacheType)",
                    "halcyon.size": "\(result.image.width)x\(result.image.height)",
                    "halcyon.duration": "\(ContinuousClock.now - start)",
                ])
                return result
            } catch {
                logger.info("halcyon could not retrieve an image", metadata: [
                    "halcyon.source": "\(source)", "halcyon.error": "\(error)",
                    "halcyon.duration": "\(ContinuousClock.now - start)",
                ])
                throw error
            }
        }

        /// Retrieves the image of `resource` (an `http(s)` URL is downloaded, a file URL read from disk); as
        /// `retrieveImage(with:options:)` with a `Source`.
        public func retrieveImage(
            with resource: any Resource, options: HalcyonOptionsInfo? = nil
        ) async throws(HalcyonError) -> RetrieveImageResult {
            try await retrieveImage(with: resource.convertToSource(), options: options)
        }
    }
}

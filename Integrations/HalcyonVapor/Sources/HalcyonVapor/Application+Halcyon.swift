import Foundation
import Halcyon
import HalcyonServer
import Logging
import NIOConcurrencyHelpers
import Vapor

extension Application {
    /// Halcyon in this application: the image routes (`mountImageRoutes(at:configuration:logger:servesMetrics:)`)
    /// and the manager that `req.halcyon` retrieves through (`manager`).
    public var halcyon: Halcyon { Halcyon(application: self) }

    /// Halcyon's state in one Vapor application, kept in the application's storage and shut down with it.
    ///
    /// Set it up in `configure(_:)`, before the application boots; reading it is thread-safe.
    public struct Halcyon: Sendable {
        /// The application whose storage holds the state.
        public let application: Application

        /// The services of the mounted image routes, and the manager set by the application.
        struct State: Sendable {
            var services: [ImageService] = []
            var manager: HalcyonManager?
        }

        struct StateKey: StorageKey, LockKey {
            typealias Value = NIOLockedValueBox<State>
        }

        /// The manager `req.halcyon` retrieves through: the one set here, else `HalcyonManager.shared`.
        ///
        /// A manager set here belongs to the application: its downloader is shut down when the application shuts
        /// down. `HalcyonManager.shared` is the process's and is left running.
        public var manager: HalcyonManager {
            get { state.withLockedValue { $0.manager } ?? .shared }
            nonmutating set { state.withLockedValue { $0.manager = newValue } }
        }

        /// The image services of the routes mounted so far, in mounting order.
        public var imageServices: [ImageService] { state.withLockedValue { $0.services } }

        /// Mounts the image service's routes under `path` (for example `"img"`): image paths (`GET`, `HEAD`),
        /// `/info/**`, `/health` and, unless `servesMetrics` is false, `/metrics`, as ``HalcyonImageRoutes`` has
        /// them; returns the new ``ImageService``.
        ///
        /// The signature covers the path below the prefix (`/img/{signature}/{options}/{source}` signs
        /// `/{options}/{source}`), taken as sent. A parameter in the prefix (`"media", ":id", "img"`) matches any
        /// one segment; a catch-all (`**`) may not be part of it. Each request's log lines go to its `req.logger`,
        /// and its answer is counted in `/metrics`. The service is built from `configuration` now (throws on an
        /// invalid one; `logger` defaults to the application's) and shut down when the application shuts down.
        ///
        /// A client that hangs up is not seen: its image work ends when the request's task is cancelled or at the
        /// configuration's request timeout.
        @discardableResult
        public func mountImageRoutes(
            at path: PathComponent..., configuration: ServerConfiguration, logger: Logger? = nil,
            servesMetrics: Bool = true
        ) throws -> ImageService {
            try mountImageRoutes(at: path, configuration: configuration, logger: logger, servesMetrics: servesMetrics)
        }

        /// Mounts the image routes under the components of `path`; see the variadic
        /// `mountImageRoutes(at:configuration:logger:servesMetrics:)`.
        @discardableResult
        public func mountImageRoutes(
            at path: [PathComponent], configuration: ServerConfiguration, logger: Logger? = nil,
            servesMetrics: Bool = true
        ) throws -> ImageService {
            let mountPath = try Self.routerPath(of: path)
            let service = try ImageService(configuration: configuration, logger: logger ?? application.logger)
            let routes = HalcyonImageRoutes<BridgeRequestContext>(service: service, servesMetrics: servesMetrics)
            let bridge = VaporImageRoutes(responder: ImageRoutesResponder(routes: routes, mountPath: mountPath))
            let group = application.grouped(path)
            for method in [HTTPMethod.GET, .HEAD] {
                group.on(method, "**", body: .collect) { request in try await bridge.respond(to: request) }
            }
            state.withLockedValue { $0.services.append(service) }
            return service
        }

        /// Shuts every mounted image service down, then the downloader of a manager set by the application; each
        /// once. The lifecycle handler calls it when the application shuts down.
        public func shutdown() async {
            let (services, manager) = state.withLockedValue { state in
                defer { (state.services, state.manager) = ([], nil) }
                return (state.services, state.manager)
            }
            for service in services { await service.shutdown() }
            await manager?.downloader.shutdown()
        }

        /// The state box, made (with the lifecycle handler that shuts it down) on first use.
        private var state: NIOLockedValueBox<State> {
            application.locks.lock(for: StateKey.self).withLock {
                if let existing = application.storage[StateKey.self] { return existing }
                let box = NIOLockedValueBox(State())
                application.storage[StateKey.self] = box
                application.lifecycle.use(HalcyonLifecycle())
                return box
            }
        }

        /// The Hummingbird router path of a Vapor prefix: constants kept, `:name` as `{name}`, `*` as `*`.
        static func routerPath(of path: [PathComponent]) throws -> String {
            let segments = try path.map { component -> String in
                switch component {
                case .constant(let text): return text
                case .parameter(let name): return "{\(name)}"
                case .anything: return "*"
                case .catchall: throw Abort(.internalServerError, reason: "the image routes' prefix cannot hold **")
                }
            }
            return "/" + segments.joined(separator: "/")
        }
    }
}

/// Shuts Halcyon's services and manager down when the application shuts down.
struct HalcyonLifecycle: LifecycleHandler {
    func shutdownAsync(_ application: Application) async {
        await application.halcyon.shutdown()
    }

    /// The synchronous shutdown (`Application.shutdown()`): waits on this thread for the asynchronous one.
    func shutdown(_ application: Application) {
        let done = DispatchSemaphore(value: 0)
        Task {
            await application.halcyon.shutdown()
            done.signal()
        }
        done.wait()
    }
}

import Foundation

extension HalcyonWrapper where Base: ImageSettable {
    // MARK: - Setting images

    /// Loads `source` and shows it on the target, Kingfisher's `setImage` flow.
    ///
    /// A nil source shows the placeholder (or clears the image) and fails with
    /// `imageSettingError(.emptySource)`. Each call gets a new task identifier;
    /// only the latest call may set the image or report progress; an older one
    /// completes with `imageSettingError(.notCurrentSourceTask)`. Unless
    /// `.keepCurrentImageWhileLoading`, the placeholder replaces the current
    /// image while loading. On failure, `.onFailureImage` is shown if given.
    ///
    /// As in Kingfisher, the result is set on the target and `completionHandler`
    /// runs on the main queue (at once when already on the main thread), and so
    /// does `progressBlock`, whatever the options' `.callbackQueue`; with
    /// `.callbackQueue(.untouch)`, for programs that do not run the main queue,
    /// both run on the thread that finished the work instead.
    @discardableResult
    public func setImage(
        with source: Source?,
        placeholder: (any Placeholder)? = nil,
        options: HalcyonOptionsInfo? = nil,
        manager: HalcyonManager = .shared,
        progressBlock: DownloadProgressBlock? = nil,
        completionHandler: (@Sendable (Result<RetrieveImageResult, HalcyonError>) -> Void)? = nil
    ) -> RetrieveImageTask? {
        let target = base
        let state = target.halcyonState
        let parsed = manager.parsedOptions(options)
        let delivery = Self.deliveryQueue(parsed.callbackQueue)
        guard let source else {
            state.cancelTask(forget: true)
            show(placeholder, on: target)
            delivery.execute { completionHandler?(.failure(.imageSettingError(reason: .emptySource))) }
            return nil
        }
        if !parsed.keepCurrentImageWhileLoading || target.image == nil {
            show(placeholder, on: target)
        }
        let identifier = state.issueIdentifier()
        let indicator = state.indicator
        indicator?.startAnimating()
        // The manager calls progress on the main queue (with `.untouch`, where the bytes arrived).
        let progress: DownloadProgressBlock = { received, expected in
            guard state.isCurrent(identifier) else { return }
            indicator?.setProgress(received: received, expected: expected)
            progressBlock?(received, expected)
        }
        var options = options ?? []
        if var progressive = parsed.progressiveJPEG {
            // Previews go on the target while this call is the current one.
            let userCallback = progressive.onImageUpdated
            progressive.onImageUpdated = { image in
                guard state.isCurrent(identifier) else { return }
                target.setImage(image, transition: .none)
                userCallback?(image)
            }
            options.append(.progressiveJPEG(progressive))
        }
        let task = manager.retrieveImage(with: source, options: options, progressBlock: progress) { result in
            delivery.execute {
                Self.finish(result, of: identifier, source: source, on: target, indicator: indicator, parsed: parsed,
                            completionHandler: completionHandler)
            }
        }
        state.setTask(task, for: identifier)
        return task
    }

    /// Where `setImage` finishes: the main queue (Kingfisher's), or where the work finished with `.untouch`.
    private static func deliveryQueue(_ callbackQueue: CallbackQueue) -> CallbackQueue {
        if case .untouch = callbackQueue { return .untouch }
        return .mainCurrentOrAsync
    }

    /// Shows the result of the load `identifier` on `target` if it is still the current one, then completes.
    private static func finish(
        _ result: Result<RetrieveImageResult, HalcyonError>, of identifier: UInt, source: Source, on target: Base,
        indicator: (any Indicator)?, parsed: HalcyonParsedOptionsInfo,
        completionHandler: (@Sendable (Result<RetrieveImageResult, HalcyonError>) -> Void)?
    ) {
        let state = target.halcyonState
        guard state.finish(identifier) else {
            let (value, error): (RetrieveImageResult?, HalcyonError?) = switch result {
            case .success(let value): (value, nil)
            case .failure(let error): (nil, error)
            }
            completionHandler?(.failure(.imageSettingError(reason: .notCurrentSourceTask(result: value, error: error, source: source))))
            return
        }
        indicator?.stopAnimating()
        switch result {
        case .success(let value):
            let transition = value.cacheType == .none || parsed.forceTransition ? parsed.transition : .none
            state.placeholder?.remove(from: target)
            state.placeholder = nil
            target.setImage(value.image, transition: transition)
        case .failure:
            if let failureImage = parsed.onFailureImage {
                state.placeholder?.remove(from: target)
                state.placeholder = nil
                target.setImage(failureImage, transition: .none)
            }
        }
        completionHandler?(result)
    }

    /// Loads `resource` (nil behaves as a nil source) and shows it on the target.
    @discardableResult
    public func setImage(
        with resource: (any Resource)?,
        placeholder: (any Placeholder)? = nil,
        options: HalcyonOptionsInfo? = nil,
        manager: HalcyonManager = .shared,
        progressBlock: DownloadProgressBlock? = nil,
        completionHandler: (@Sendable (Result<RetrieveImageResult, HalcyonError>) -> Void)? = nil
    ) -> RetrieveImageTask? {
        setImage(with: resource?.convertToSource(), placeholder: placeholder, options: options, manager: manager,
                 progressBlock: progressBlock, completionHandler: completionHandler)
    }

    /// Loads the bytes of `provider` (nil behaves as a nil source) and shows them on the target.
    @discardableResult
    public func setImage(
        with provider: (any ImageDataProvider)?,
        placeholder: (any Placeholder)? = nil,
        options: HalcyonOptionsInfo? = nil,
        manager: HalcyonManager = .shared,
        progressBlock: DownloadProgressBlock? = nil,
        completionHandler: (@Sendable (Result<RetrieveImageResult, HalcyonError>) -> Void)? = nil
    ) -> RetrieveImageTask? {
        setImage(with: provider.map { Source.provider($0) }, placeholder: placeholder, options: options, manager: manager,
                 progressBlock: progressBlock, completionHandler: completionHandler)
    }

    // Kingfisher's overloads without a progress block: with them, a trailing closure is the completion handler
    // (`imageView.hc.setImage(with: url) { result in … }`), not the progress block.

    /// Loads `source` and shows it on the target; the overload without a progress block.
    @discardableResult
    public func setImage(
        with source: Source?,
        placeholder: (any Placeholder)? = nil,
        options: HalcyonOptionsInfo? = nil,
        manager: HalcyonManager = .shared,
        completionHandler: (@Sendable (Result<RetrieveImageResult, HalcyonError>) -> Void)? = nil
    ) -> RetrieveImageTask? {
        setImage(with: source, placeholder: placeholder, options: options, manager: manager, progressBlock: nil,
                 completionHandler: completionHandler)
    }

    /// Loads `resource` and shows it on the target; the overload without a progress block.
    @discardableResult
    public func setImage(
        with resource: (any Resource)?,
        placeholder: (any Placeholder)? = nil,
        options: HalcyonOptionsInfo? = nil,
        manager: HalcyonManager = .shared,
        completionHandler: (@Sendable (Result<RetrieveImageResult, HalcyonError>) -> Void)? = nil
    ) -> RetrieveImageTask? {
        setImage(with: resource?.convertToSource(), placeholder: placeholder, options: options, manager: manager,
                 progressBlock: nil, completionHandler: completionHandler)
    }

    /// Loads the bytes of `provider` and shows them on the target; the overload without a progress block.
    @discardableResult
    public func setImage(
        with provider: (any ImageDataProvider)?,
        placeholder: (any Placeholder)? = nil,
        options: HalcyonOptionsInfo? = nil,
        manager: HalcyonManager = .shared,
        completionHandler: (@Sendable (Result<RetrieveImageResult, HalcyonError>) -> Void)? = nil
    ) -> RetrieveImageTask? {
        setImage(with: provider.map { Source.provider($0) }, placeholder: placeholder, options: options, manager: manager,
                 progressBlock: nil, completionHandler: completionHandler)
    }

    /// Cancels the target's current load; its completion reports `taskCancelled` (`dataProviderCancelled` when a data
    /// provider was loading).
    public func cancelDownloadTask() {
        base.halcyonState.cancelTask()
    }

    /// The identifier of the target's current load, nil when none runs.
    public var taskIdentifier: UInt? { base.halcyonState.taskIdentifier }

    /// The indicator shown while the target loads.
    public var indicator: (any Indicator)? {
        get { base.halcyonState.indicator }
        nonmutating set { base.halcyonState.indicator = newValue }
    }

    /// The kind of indicator shown while the target loads (Kingfisher's `kf.indicatorType`); setting it
    /// makes a new ``indicator`` (``ActivityIndicator``, ``ImageIndicator``, the custom one, or none).
    public var indicatorType: IndicatorType {
        get { base.halcyonState.indicatorType }
        nonmutating set {
            base.halcyonState.indicatorType = newValue
            base.halcyonState.indicator = newValue.makeIndicator()
        }
    }

    private func show(_ placeholder: (any Placeholder)?, on target: Base) {
        let state = target.halcyonState
        state.placeholder?.remove(from: target)
        state.placeholder = placeholder
        if let placeholder {
            placeholder.add(to: target)
        } else {
            target.setImage(nil, transition: .none)
        }
    }
}

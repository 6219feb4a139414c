import Foundation
import Halcyon

// MARK: - Sizes

extension ThumbnailStep {
    /// The sizes one source goes through, all in source pixels until the resize.
    struct Plan {
        /// The source after the user's turn.
        var turned: (width: Int, height: Int)
        /// The crop, in turned source pixels.
        var crop: (x: Int, y: Int, width: Int, height: Int)?
        /// The resize's output, before the crop to the box.
        var resized: (width: Int, height: Int)
        /// The result after the crop to the box (fill, fill-down, and `mw`/`mh` past the width or height).
        var result: (width: Int, height: Int)
        /// The factors from the cropped source to the resize before any fill crop.
        var scaleX: Double
        var scaleY: Double
        /// Whether the resized image is cut to `result` at the gravity.
        var fillCrop: Bool { resized.width != result.width || resized.height != result.height }
        /// The result after extend and extend-aspect-ratio.
        var canvas: (width: Int, height: Int)
        /// The largest factor of the resize: below 1, the loader may shrink.
        var scale: Double { max(scaleX, scaleY) }
    }

    /// The plan for an upright source of `sourceWidth` × `sourceHeight` (after trim).
    func plan(sourceWidth: Int, sourceHeight: Int) -> Plan {
        let turned = turnsSideways ? (width: sourceHeight, height: sourceWidth) : (width: sourceWidth, height: sourceHeight)
        var region = turned
        var rect: (x: Int, y: Int, width: Int, height: Int)?
        if let crop {
            let size = crop.size(sourceWidth: turned.width, sourceHeight: turned.height)
            let origin = (crop.placement ?? gravity).origin(outer: turned, inner: size)
            rect = (origin.x, origin.y, size.width, size.height)
            region = size
        }
        let target = self.target(sourceWidth: region.width, sourceHeight: region.height)
        let result = (width: target.width, height: target.height)
        let resized = (width: max(result.width, Int((Double(region.width) * target.scaleX).rounded())),
                       height: max(result.height, Int((Double(region.height) * target.scaleY).rounded())))
        return Plan(turned: turned, crop: rect, resized: resized, result: result, scaleX: target.scaleX, scaleY: target.scaleY,
                    canvas: canvas(for: result))
    }

    /// The result placed on the extend canvas: at least the box (`ex`), then grown to the box's aspect ratio (`exar`).
    func canvas(for result: (width: Int, height: Int)) -> (width: Int, height: Int) {
        var canvas = result
        if extend != nil {
            if width > 0 { canvas.width = max(canvas.width, width) }
            if height > 0 { canvas.height = max(canvas.height, height) }
        }
        if extendAspectRatio != nil, width > 0, height > 0 {
            let aspect = Double(width) / Double(height)
            if Double(canvas.width) / Double(canvas.height) > aspect {
                canvas.height = max(canvas.height, Int((Double(canvas.width) / aspect).rounded()))
            } else {
                canvas.width = max(canvas.width, Int((Double(canvas.height) * aspect).rounded()))
            }
        }
        return canvas
    }

    /// The output size for a (cropped) source of `sourceWidth` × `sourceHeight`, and the resize factors.
    ///
    /// The output never passes a non-zero width or height: a result scaled past them (fill, or `mw`/`mh`
    /// raising a fit) is cropped to them, as imgproxy does.
    func target(sourceWidth: Int, sourceHeight: Int) -> (width: Int, height: Int, scaleX: Double, scaleY: Double) {
        let sw = Double(max(1, sourceWidth)), sh = Double(max(1, sourceHeight))
        let wantW = Double(width), wantH = Double(height)
        // Raised to meet the minimum width and height, then capped at 1 unless enlarging.
        let minimumScaled = { (scale: Double) -> Double in
            var scale = scale
            if minWidth > 0 { scale = max(scale, Double(minWidth) / sw) }
            if minHeight > 0 { scale = max(scale, Double(minHeight) / sh) }
            return enlarge ? scale : min(1, scale)
        }
        let sized = { (scaleX: Double, scaleY: Double) in
            (max(1, Int((sw * scaleX).rounded())), max(1, Int((sh * scaleY).rounded())), scaleX, scaleY)
        }
        if width == 0 && height == 0 {
            return sized(minimumScaled(scaleX), minimumScaled(scaleY))
        }
        let mode = resolvedMode(sourceWidth: sourceWidth, sourceHeight: sourceHeight)
        if mode == .force {
            return sized(width > 0 ? wantW / sw : wantH / sh, height > 0 ? wantH / sh : wantW / sw)
        }
        if width == 0 || height == 0 || mode == .fit || mode == .auto {
            // One side given, or fit: inside the box, aspect kept.
            let fit = width == 0 ? wantH / sh : height == 0 ? wantW / sw : min(wantW / sw, wantH / sh)
            let scale = minimumScaled(fit)
            let whole = sized(scale, scale)
            return (width > 0 ? min(width, whole.0) : whole.0, height > 0 ? min(height, whole.1) : whole.1, scale, scale)
        }
        if mode == .fillDown && max(wantW / sw, wantH / sh) > 1 && !enlarge {
            // Smaller than the box: the largest crop of the box's aspect ratio, not enlarged.
            let cropW = min(sw, sh * wantW / wantH), cropH = min(sh, sw * wantH / wantW)
            return (max(1, Int(cropW.rounded())), max(1, Int(cropH.rounded())), 1, 1)
        }
        let scale = minimumScaled(max(wantW / sw, wantH / sh))
        return (min(width, max(1, Int((sw * scale).rounded()))), min(height, max(1, Int((sh * scale).rounded()))), scale, scale)
    }

    /// `auto` made concrete for a source: fill when it and the box are both landscape or both portrait, else fit.
    func resolvedMode(sourceWidth: Int, sourceHeight: Int) -> ProcessingOptions.ResizeMode {
        guard mode == .auto else { return mode }
        guard width > 0, height > 0 else { return .fit }
        return (sourceWidth >= sourceHeight) == (width >= height) ? .fill : .fit
    }
}

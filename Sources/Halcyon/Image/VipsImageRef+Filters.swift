import CHalcyonVips

// The libvips operations processors use beyond the common ones in
// `VipsImageRef.swift`, so that processors stay pure Swift over `VipsImageRef`.
extension VipsImageRef {
    /// A Gaussian blur with standard deviation `sigma` pixels.
    func gaussianBlurred(sigma: Double) throws(HalcyonError) -> VipsImageRef {
        try apply("gaussblur") { hc_gaussblur($0, sigma, $1) }
    }

    /// Each pixel of a 3-band image multiplied by the row-major 3 × 3 `matrix`.
    func recombined(_ matrix: [Double]) throws(HalcyonError) -> VipsImageRef {
        guard matrix.count == 9 else {
            throw .processorError(reason: .operationFailed(operation: "recomb", message: "the matrix needs 9 values, not \(matrix.count)"))
        }
        return try apply("recomb") { input, output in
            matrix.withUnsafeBufferPointer { hc_recomb3(input, $0.baseAddress, output) }
        }
    }

    /// Shrunk (never enlarged) so that it fits in `maxPixels` × `maxPixels`, keeping its aspect ratio.
    func thumbnailed(fitting maxPixels: Int) throws(HalcyonError) -> VipsImageRef {
        let side = Int32(clamping: max(1, maxPixels))
        return try apply("thumbnail_image") { hc_thumbnail_image($0, side, side, $1) }
    }

    /// This image multiplied pixel by pixel by `other` (same size; bands broadcast as libvips does).
    func multiplied(by other: VipsImageRef) throws(HalcyonError) -> VipsImageRef {
        try apply("multiply", with: [other]) { hc_multiply($0, other.pointer, $1) }
    }
}

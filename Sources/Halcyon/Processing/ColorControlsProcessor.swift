import Foundation

/// Adjusts saturation, brightness, contrast and exposure, like Core Image's
/// `CIColorControls` followed by `CIExposureAdjust`.
///
/// On channel values `c` in 0...1, in this order: saturation mixes the pixel
/// with its Rec. 709 luma (`luma + (c − luma) × saturation`), brightness adds
/// (`c + brightness`), contrast scales around mid-grey (`(c − 0.5) × contrast
/// + 0.5`), exposure multiplies by `2^inputEV`; the result is clipped to 0...1.
/// Alpha is kept. Animations keep every frame.
public struct ColorControlsProcessor: ImageProcessor {
    public let brightness: CGFloat
    public let contrast: CGFloat
    public let saturation: CGFloat
    public let inputEV: CGFloat
    public let identifier: String

    /// Makes the processor; the neutral values are 0, 1, 1 and 0.
    public init(brightness: CGFloat, contrast: CGFloat, saturation: CGFloat, inputEV: CGFloat) {
        self.init(brightness: brightness, contrast: contrast, saturation: saturation, inputEV: inputEV,
                  identifier: "\(ProcessorIdentifier.prefix)colorControls(\(ProcessorIdentifier.number(brightness)),"
                      + "\(ProcessorIdentifier.number(contrast)),\(ProcessorIdentifier.number(saturation)),"
                      + "\(ProcessorIdentifier.number(inputEV)))")
    }

    init(brightness: CGFloat, contrast: CGFloat, saturation: CGFloat, inputEV: CGFloat, identifier: String) {
        self.brightness = brightness
        self.contrast = contrast
        self.saturation = saturation
        self.inputEV = inputEV
        self.identifier = identifier
    }

    public func process(item: ImageProcessItem, options: HalcyonParsedOptionsInfo) throws(HalcyonError) -> Image {
        let values = [brightness, contrast, saturation, inputEV]
        guard values.allSatisfy(\.isFinite) else {
            throw .processorError(reason: .invalidParameter(processor: identifier, message: "values must be finite"))
        }
        let matrix = ColorControlsProcessor.saturationMatrix(Double(saturation))
        let exposure = pow(2, Double(inputEV))
        let gain = Double(contrast) * exposure
        let offset = ((Double(brightness) - 0.5) * Double(contrast) + 0.5) * exposure * 255
        return try processFrames(item, options: options) { (frame, _) throws(HalcyonError) in
            var rgb = try frame.bands(from: 0, count: 3)
            if saturation != 1 {
                rgb = try rgb.recombined(matrix)
            }
            let adjusted = try rgb.linear(multiply: [gain, gain, gain], add: [offset, offset, offset])
            guard frame.bands == 4 else { return adjusted }
            return try adjusted.joined(with: frame.bands(from: 3, count: 1))
        }
    }

    /// Row-major 3×3 matrix mixing each channel with Rec. 709 luma.
    static func saturationMatrix(_ saturation: Double) -> [Double] {
        let luma = [0.2125, 0.7154, 0.0721]
        var matrix = [Double](repeating: 0, count: 9)
        for row in 0..<3 {
            for column in 0..<3 {
                matrix[row * 3 + column] = luma[column] * (1 - saturation) + (row == column ? saturation : 0)
            }
        }
        return matrix
    }
}

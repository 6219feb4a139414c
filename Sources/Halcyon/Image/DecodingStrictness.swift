/// How much damage in the encoded data a decode tolerates: libvips' `fail_on`.
///
/// Decoders patch over damage: libjpeg fills what it cannot decode with grey
/// blocks, so a damaged source can come back as an image. Each level refuses
/// what the levels before it refuse, and more:
///
/// | level | refuses | JPEG (libjpeg) in practice |
/// |---|---|---|
/// | ``none`` | nothing the decoder can get past | truncated and damaged files decode, patched |
/// | ``truncated`` (the default) | data that ends early | "Premature end of JPEG file" refused; damaged entropy data still decodes |
/// | ``error`` | serious decoder errors too | as `truncated`: libjpeg reports damaged entropy data as warnings, not errors |
/// | ``warning`` | any decoder warning | "Corrupt JPEG data: ..." refused too (the CLI's `--strict`) |
///
/// A refusal is `HalcyonError.processorError(.corruptData)`. The library's
/// default is ``truncated`` (``default``); `halcyon --strict` uses ``warning``;
/// `halcyon serve` takes `--fail-on` / `HALCYON_FAIL_ON`.
public enum DecodingStrictness: String, Sendable, Hashable, Codable, CaseIterable, CustomStringConvertible {
    /// Never refuse data the decoder can get past (libvips `fail_on=none`).
    case none
    /// Refuse truncated data (libvips `fail_on=truncated`); the library default.
    case truncated
    /// Refuse data with serious errors or truncation (libvips `fail_on=error`).
    case error
    /// Refuse data on any decoder warning (libvips `fail_on=warning`).
    case warning

    /// The library's default: ``truncated``.
    public static let `default` = DecodingStrictness.truncated

    /// The libvips name, as `HALCYON_FAIL_ON` and `--fail-on` take it.
    public var description: String { rawValue }

    /// libvips' `VipsFailOn` value.
    var vipsFailOn: Int32 {
        switch self {
        case .none: return 0
        case .truncated: return 1
        case .error: return 2
        case .warning: return 3
        }
    }
}

import Foundation

/// Encoded image bytes at a fixed address, for libvips to read lazily.
///
/// `vips_image_new_from_buffer` does not copy its input, so bytes a lazy image
/// reads must stay put for as long as any image made from it lives. `Data`
/// gives no stable address outside `withUnsafeBytes`; this copy does, and
/// every `VipsImageRef` that may read it holds it.
final class EncodedBuffer: Sendable {
    /// `nonisolated(unsafe)`: written once in `init`, read-only after, freed in `deinit`.
    nonisolated(unsafe) let bytes: UnsafeMutableRawBufferPointer

    init(copying data: Data) {
        let storage = UnsafeMutableRawBufferPointer.allocate(byteCount: max(1, data.count), alignment: 16)
        data.withUnsafeBytes { source in
            if let base = source.baseAddress, data.count > 0 {
                storage.baseAddress?.copyMemory(from: base, byteCount: data.count)
            }
        }
        bytes = storage
        count = data.count
    }

    /// Number of meaningful bytes (the allocation may be one byte for empty data).
    let count: Int

    deinit {
        bytes.deallocate()
    }
}

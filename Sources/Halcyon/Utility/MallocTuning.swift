import CHalcyonVips

/// glibc allocator settings for long-running image services.
///
/// glibc makes up to eight malloc arenas per core and keeps freed memory in
/// them, so after concurrent decodes the resident size stays far above what
/// is live. A server caps the arenas once at start-up and trims after large
/// jobs; a short-lived tool need not do either.
public enum MallocTuning {
    /// Caps malloc arenas at `count` (call before threads start; arenas that exist stay); false when refused.
    @discardableResult
    public static func limitArenas(to count: Int) -> Bool {
        hc_malloc_set_arena_max(Int32(max(1, count))) == 0
    }

    /// Gives free heap memory back to the system; costs a walk of the heap, so call it after large jobs only.
    public static func trim() {
        hc_malloc_trim()
    }
}

import CHalcyonVips

/// glibc allocator settings for long-running image services.
///
/// glibc makes up to eight malloc arenas per core and keeps freed memory in
/// them, so after concurrent decodes the resident size stays far above what
/// is live. A server caps the arenas once at start-up and trims after large
/// jobs; a short-lived tool need not do either.
package enum MallocTuning {
    /// Caps malloc arenas at `count` (call before threads start; arenas that exist stay); false when refused.
    @discardableResult
    package static func limitArenas(to count: Int) -> Bool {
        hc_malloc_set_arena_max(Int32(max(1, count))) == 0
    }

    /// Serves allocations of `bytes` or more with their own mappings (call once at start-up); false when refused.
    ///
    /// glibc raises this threshold each time a mapped block is freed (up to
    /// 32 MiB), so how much a process keeps depends on its history. A fixed
    /// threshold decides it once: a block this size or larger is mapped when
    /// allocated and handed back when freed, and the kernel zeroes every page
    /// of it again on first touch; a smaller one is reused from the arenas.
    @discardableResult
    package static func mapLargeAllocations(from bytes: Int) -> Bool {
        hc_malloc_set_mmap_threshold(Int32(clamping: max(4096, bytes))) == 0
    }

    /// Keeps up to `bytes` of free memory at the top of a heap before free() hands it back (call once at
    /// start-up; the growth the mmap threshold would make stops too); false when refused.
    @discardableResult
    package static func keepFreeHeapTop(upTo bytes: Int) -> Bool {
        hc_malloc_set_trim_threshold(Int32(clamping: max(0, bytes))) == 0
    }

    /// Gives free heap memory back to the system; costs a walk of the heap, so call it after large jobs only.
    package static func trim() {
        hc_malloc_trim()
    }
}

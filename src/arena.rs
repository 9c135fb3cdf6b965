//! A bump allocator for a process that decides one hook call and exits.
//!
//! A hook process allocates a few thousand small blocks (policy, manifests,
//! compiled patterns, the answer) and frees almost all of them only when it
//! exits; under glibc's `malloc` that bookkeeping was about a fifth of a
//! hook's instructions (docs/performance.md). Once [`enable`] is called,
//! small blocks come from one region taken with a single `mmap` and handed
//! out in order; freeing one does nothing (the process is about to exit),
//! growing the last block extends it in place. Everything else goes to the
//! system allocator as before: large blocks, blocks once the region is used
//! up (so a long after-event scan stays bounded), every block of a process
//! that never calls [`enable`] (`serve`, `check`, tests), and every block
//! allocated before it.
//!
//! The binary installs [`Arena`] as its global allocator; the library never
//! does (an embedder keeps its own).

use std::alloc::{GlobalAlloc, Layout, System};
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};

/// Blocks larger than this always come from the system allocator.
const MAX_BLOCK: usize = 64 << 10;
/// The region's size: what a hook's before-event needs several times over;
/// its pages are only touched as blocks are handed out.
const REGION: usize = 8 << 20;

/// How much of the region is made ready up front.
#[cfg(any(target_os = "linux", target_os = "android"))]
const POPULATE: usize = 256 << 10;

static ON: AtomicBool = AtomicBool::new(false);
static START: AtomicUsize = AtomicUsize::new(0);
static END: AtomicUsize = AtomicUsize::new(0);
static NEXT: AtomicUsize = AtomicUsize::new(0);

/// The global allocator of the `toolgate` binary: the system allocator,
/// plus the bump region once [`enable`] was called.
pub struct Arena;

/// Starts handing out small blocks from a fresh region. For a process that
/// decides one call and exits (a hook): nothing in the region is reused
/// before the process ends. Calling it again does nothing; if the region
/// cannot be mapped, everything stays with the system allocator.
pub fn enable() {
    if ON.load(Ordering::Acquire) {
        return;
    }
    // SAFETY: an anonymous private mapping with no address hint; the result
    // is checked against MAP_FAILED.
    let p = unsafe {
        libc::mmap(
            std::ptr::null_mut(),
            REGION,
            libc::PROT_READ | libc::PROT_WRITE,
            libc::MAP_PRIVATE | libc::MAP_ANONYMOUS | libc::MAP_NORESERVE,
            -1,
            0,
        )
    };
    if p == libc::MAP_FAILED {
        return;
    }
    // The pages a before-event uses, mapped in one call rather than one
    // page fault each (fewer faults than the heap it replaces; measured in
    // docs/performance.md). Best effort: an older kernel faults them in.
    #[cfg(any(target_os = "linux", target_os = "android"))]
    // SAFETY: the first pages of the mapping just made.
    let _ = unsafe { libc::madvise(p, POPULATE, libc::MADV_POPULATE_WRITE) };
    let start = p as usize;
    START.store(start, Ordering::Relaxed);
    END.store(start + REGION, Ordering::Relaxed);
    NEXT.store(start, Ordering::Relaxed);
    ON.store(true, Ordering::Release);
}

/// True when `ptr` was handed out by the region.
fn in_region(ptr: *mut u8) -> bool {
    let p = ptr as usize;
    p >= START.load(Ordering::Relaxed) && p < END.load(Ordering::Relaxed)
}

/// A block of `layout` from the region, or None (off, too large, full).
fn bump(layout: Layout) -> Option<*mut u8> {
    if layout.size() > MAX_BLOCK || !ON.load(Ordering::Acquire) {
        return None;
    }
    let end = END.load(Ordering::Relaxed);
    let mut cur = NEXT.load(Ordering::Relaxed);
    loop {
        let start = cur.checked_add(layout.align() - 1)? & !(layout.align() - 1);
        let next = start.checked_add(layout.size().max(1))?;
        if next > end {
            return None;
        }
        match NEXT.compare_exchange_weak(cur, next, Ordering::Relaxed, Ordering::Relaxed) {
            Ok(_) => return Some(start as *mut u8),
            Err(now) => cur = now,
        }
    }
}

// SAFETY: blocks from the region are distinct (the bump pointer only moves
// forward, by compare-and-swap), aligned as asked, and never handed out
// twice; the region's memory is zero until first handed out (a fresh
// anonymous mapping that is never reused), which `alloc_zeroed` relies on.
// Every other block is the system allocator's, and goes back to it.
unsafe impl GlobalAlloc for Arena {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        match bump(layout) {
            Some(p) => p,
            // SAFETY: the caller's contract for `alloc`, passed on.
            None => unsafe { System.alloc(layout) },
        }
    }

    unsafe fn alloc_zeroed(&self, layout: Layout) -> *mut u8 {
        match bump(layout) {
            Some(p) => p,
            // SAFETY: as above.
            None => unsafe { System.alloc_zeroed(layout) },
        }
    }

    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        if !in_region(ptr) {
            // SAFETY: a block the system allocator handed out, with its layout.
            unsafe { System.dealloc(ptr, layout) }
        }
    }

    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        if !in_region(ptr) {
            // SAFETY: a block the system allocator handed out.
            return unsafe { System.realloc(ptr, layout, new_size) };
        }
        if new_size <= layout.size() {
            return ptr;
        }
        // The last block handed out grows in place (a `String` or `Vec`
        // being filled) while the region has room and it stays small.
        let old_end = ptr as usize + layout.size();
        if new_size <= MAX_BLOCK
            && ptr as usize + new_size <= END.load(Ordering::Relaxed)
            && NEXT
                .compare_exchange(
                    old_end,
                    ptr as usize + new_size,
                    Ordering::Relaxed,
                    Ordering::Relaxed,
                )
                .is_ok()
        {
            return ptr;
        }
        // SAFETY: `new_size` is non-zero and, rounded up to the alignment,
        // does not overflow (the caller's contract for `realloc`).
        let new_layout = unsafe { Layout::from_size_align_unchecked(new_size, layout.align()) };
        // SAFETY: as above.
        let new = unsafe { self.alloc(new_layout) };
        if !new.is_null() {
            // SAFETY: both blocks are valid for `layout.size()` bytes (the
            // new one is larger) and distinct.
            unsafe { std::ptr::copy_nonoverlapping(ptr, new, layout.size()) };
        }
        new
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    // One test: the region is process-wide, and the test harness runs
    // tests on several threads.
    #[test]
    fn blocks_are_distinct_aligned_zeroed_and_grow_in_place() {
        let a = Arena;
        let off = Layout::from_size_align(24, 8).unwrap();
        // Before `enable`: the system allocator's blocks.
        let sys = unsafe { a.alloc(off) };
        assert!(!sys.is_null() && !in_region(sys));
        enable();
        enable(); // a second call keeps the same region
        let start = START.load(Ordering::Relaxed);
        assert_eq!(END.load(Ordering::Relaxed) - start, REGION);

        let mut seen: Vec<(usize, usize)> = Vec::new();
        for (i, align) in [1usize, 2, 8, 16, 64, 4096, 8, 1].into_iter().enumerate() {
            let layout = Layout::from_size_align(3 + i * 5, align).unwrap();
            let p = unsafe { a.alloc_zeroed(layout) };
            assert!(in_region(p), "small blocks come from the region");
            assert_eq!(p as usize % align, 0, "aligned to {align}");
            let bytes = unsafe { std::slice::from_raw_parts_mut(p, layout.size()) };
            assert!(bytes.iter().all(|b| *b == 0), "fresh blocks are zero");
            bytes.fill(0xAB);
            seen.push((p as usize, p as usize + layout.size()));
        }
        for (i, x) in seen.iter().enumerate() {
            for y in &seen[i + 1..] {
                assert!(x.1 <= y.0 || y.1 <= x.0, "blocks overlap: {x:?} {y:?}");
            }
        }

        // The last block grows in place; an earlier one moves, keeping its bytes.
        let l = Layout::from_size_align(10, 1).unwrap();
        let last = unsafe { a.alloc(l) };
        unsafe { std::ptr::write_bytes(last, 7, 10) };
        let grown = unsafe { a.realloc(last, l, 100) };
        assert_eq!(grown, last);
        let other = unsafe { a.alloc(l) };
        let moved = unsafe { a.realloc(grown, Layout::from_size_align(100, 1).unwrap(), 200) };
        assert_ne!(moved, grown);
        assert!(unsafe { std::slice::from_raw_parts(moved, 10) }
            .iter()
            .all(|b| *b == 7));
        assert!(
            moved as usize >= other as usize + 10,
            "the moved block is new"
        );
        let shrunk = unsafe { a.realloc(moved, Layout::from_size_align(200, 1).unwrap(), 5) };
        assert_eq!(shrunk, moved);
        unsafe { a.dealloc(shrunk, Layout::from_size_align(5, 1).unwrap()) };

        // Large blocks, and a region block grown past the limit, are the
        // system's; a system block freed and grown stays the system's.
        let big = Layout::from_size_align(MAX_BLOCK + 1, 8).unwrap();
        let b = unsafe { a.alloc(big) };
        assert!(!b.is_null() && !in_region(b));
        unsafe { a.dealloc(b, big) };
        let small = unsafe { a.alloc(l) };
        unsafe { std::ptr::write_bytes(small, 9, 10) };
        let out = unsafe { a.realloc(small, l, MAX_BLOCK * 2) };
        assert!(!in_region(out));
        assert!(unsafe { std::slice::from_raw_parts(out, 10) }
            .iter()
            .all(|b| *b == 9));
        unsafe { a.dealloc(out, Layout::from_size_align(MAX_BLOCK * 2, 1).unwrap()) };
        let sys2 = unsafe { a.realloc(sys, off, 4000) };
        assert!(!in_region(sys2));
        unsafe { a.dealloc(sys2, Layout::from_size_align(4000, 8).unwrap()) };

        // A full region hands out nothing more; the system takes over.
        let rest = END.load(Ordering::Relaxed) - NEXT.load(Ordering::Relaxed);
        let chunk = Layout::from_size_align(MAX_BLOCK, 1).unwrap();
        for _ in 0..rest / MAX_BLOCK {
            assert!(in_region(unsafe { a.alloc(chunk) }));
        }
        let after = unsafe { a.alloc(chunk) };
        assert!(
            !after.is_null() && !in_region(after),
            "the system takes over"
        );
        unsafe { a.dealloc(after, chunk) };
        assert!(NEXT.load(Ordering::Relaxed) <= END.load(Ordering::Relaxed));
    }
}

package sandbox

import (
	"container/list"
	"sync"

	"github.com/codemode-go/codemode/internal/quickjs"
)

// A suspended run's VM may stay alive ("hot") so that wait continues it in place: no snapshot on
// the way out, no restore on the way back. The snapshot remains the durable form: it is taken when
// the VM is evicted (or whenever the run's state must leave the process), and the behaviour of a
// run is the same either way. HotCache bounds the live VMs by count and bytes; the least recently
// suspended one is evicted first.

// HotCache holds the VMs of hot suspended runs. It is safe for concurrent use.
type HotCache struct {
	mu       sync.Mutex
	maxRuns  int
	maxBytes int64
	lru      *list.List // of *hotEntry, most recently suspended at the front
	bytes    int64
	evicted  int64
}

type hotEntry struct {
	r     *Run
	bytes int64
	el    *list.Element
}

// NewHotCache keeps at most maxRuns VMs and maxBytes of their memory (linear memory capacity,
// quickjs.VM.ReservedBytes) alive. A cache with
// maxRuns ≤ 0 keeps none.
func NewHotCache(maxRuns int, maxBytes int64) *HotCache {
	return &HotCache{maxRuns: maxRuns, maxBytes: maxBytes, lru: list.New()}
}

// HotStats describe a cache.
type HotStats struct {
	Runs    int
	Bytes   int64
	Evicted int64 // VMs evicted to their snapshots so far
}

// Stats reports the cache.
func (h *HotCache) Stats() HotStats {
	h.mu.Lock()
	defer h.mu.Unlock()
	return HotStats{Runs: h.lru.Len(), Bytes: h.bytes, Evicted: h.evicted}
}

// admit makes room for a VM of n bytes, evicting the least recently suspended runs, and returns
// its entry; nil when it cannot fit at all.
func (h *HotCache) admit(r *Run, n int64) *hotEntry {
	if h == nil || h.maxRuns <= 0 || n > h.maxBytes {
		return nil
	}
	h.mu.Lock()
	for h.lru.Len() > 0 && (h.lru.Len()+1 > h.maxRuns || h.bytes+n > h.maxBytes) {
		victim := h.lru.Back().Value.(*hotEntry)
		h.removeLocked(victim)
		h.evicted++
		h.mu.Unlock()
		victim.r.evict(victim)
		h.mu.Lock()
	}
	if h.lru.Len()+1 > h.maxRuns || h.bytes+n > h.maxBytes {
		h.mu.Unlock()
		return nil
	}
	e := &hotEntry{r: r, bytes: n}
	e.el = h.lru.PushFront(e)
	h.bytes += n
	h.mu.Unlock()
	return e
}

// take removes an entry (a run resuming or closing); it reports whether it was still there.
func (h *HotCache) take(e *hotEntry) bool {
	if h == nil || e == nil {
		return false
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	if e.el == nil {
		return false
	}
	h.removeLocked(e)
	return true
}

func (h *HotCache) removeLocked(e *hotEntry) {
	h.lru.Remove(e.el)
	e.el = nil
	h.bytes -= e.bytes
}

// keepHot tries to keep vm alive for a suspended run instead of snapshotting it. It does so only
// when the snapshot could not exceed maxSnapshotBytes in any case (the VM's whole memory fits),
// so the limit is enforced exactly as if the snapshot had been taken now (W3). The caller holds
// r.vmMu.
func (r *Run) keepHot(vm *quickjs.VM) bool {
	h := r.eng.hot
	if h == nil || vm.Dead() != nil {
		return false
	}
	if r.maxSnapshot > 0 && hotSnapshotBound(int64(vm.MemorySize())) > int64(r.maxSnapshot) {
		return false
	}
	// The budget counts what the VM holds, its memory's capacity, not only the bytes in use.
	e := h.admit(r, vm.ReservedBytes())
	if e == nil {
		return false
	}
	r.vm, r.hotEntry = vm, e
	return true
}

// hotSnapshotBound is the most a snapshot of a VM with size bytes of memory can take: zstd never
// grows data by more than a small fraction; the header and page list are small.
func hotSnapshotBound(size int64) int64 { return size + size/64 + snapshotHeader + 4096 }

// evict turns a hot run cold: its snapshot is taken (unless it already has one) and its VM
// closed. It does nothing when the run left the cache in the meantime (it was resumed, closed, or
// is hot again under a new entry).
func (r *Run) evict(e *hotEntry) {
	r.vmMu.Lock()
	defer r.vmMu.Unlock()
	if r.hotEntry != e || r.vm == nil {
		return
	}
	if r.snapshot == nil {
		if err := r.captureLocked(); err != nil {
			r.snapshotErr = err
		}
	}
	r.vm.Close()
	r.vm, r.hotEntry = nil, nil
}

// captureLocked encodes the hot VM's snapshot. The caller holds r.vmMu.
func (r *Run) captureLocked() error {
	img, err := r.vm.CaptureView()
	if err != nil {
		return err
	}
	r.snapshot = EncodeSnapshot(r.eng.snapKey, r.tmpl, img)
	return nil
}

// dropVM closes a hot run's VM without a snapshot (the run ends). The caller holds r.vmMu.
func (r *Run) dropVMLocked() {
	if r.vm == nil {
		return
	}
	r.eng.hot.take(r.hotEntry)
	r.vm.Close()
	r.vm, r.hotEntry = nil, nil
}

// Hot reports whether the run's VM is alive (wait continues it in place).
func (r *Run) Hot() bool {
	r.vmMu.Lock()
	defer r.vmMu.Unlock()
	return r.vm != nil
}

package quickjs

import (
	"runtime/debug"
	"sync"
	"sync/atomic"
	"time"

	"github.com/tetratelabs/wazero/experimental"
)

// Linear memories are recycled: every exec instantiates a VM and copies a template image of a
// few MB into it, and allocating (then garbage-collecting) that much per exec dominated its cost.
// A recycled buffer is zeroed before the instance sees it, as WebAssembly requires, so nothing of
// a previous VM survives into the next.
//
// The pool is bounded (by default 16 buffers; the gateway sets it to its number of admission
// slots), and it empties itself once nothing has been allocated from it or returned to it for
// poolIdle, handing the memory back to the OS: a burst of parallel VMs, or hot suspended runs
// that expire long after it, do not stay resident (a soak left 256 MiB pooled for good when the
// last memories came back from expiring runs after the admission's idle hook had fired).

const (
	// memReserve is the capacity a fresh buffer gets, so templates and typical cells never
	// reallocate while running.
	memReserve = 8 << 20
	// memPoolMax bounds the buffers worth keeping; larger ones (a cell that used a lot of memory)
	// go back to the garbage collector.
	memPoolMax = 32 << 20
	// memGrowStep bounds one growth step of a large memory.
	memGrowStep = 16 << 20
)

var memPool = struct {
	sync.Mutex
	free  [][]byte // len 0, cap ≤ memPoolMax
	max   int
	use   uint64      // pool operations so far: the idle timer checks none happened since
	timer *time.Timer // armed while the pool holds buffers
}{max: 16}

// poolIdle is how long the pool keeps buffers nobody takes (under memPool's lock: tests set it).
var poolIdle = 10 * time.Second

// touchLocked counts a pool operation and arms the idle release when buffers are held.
func touchLocked() {
	memPool.use++
	if len(memPool.free) == 0 || memPool.timer != nil {
		return
	}
	use := memPool.use
	var fire func()
	fire = func() {
		memPool.Lock()
		if memPool.use != use && len(memPool.free) > 0 { // used since: look again later
			use = memPool.use
			memPool.timer = time.AfterFunc(poolIdle, fire)
			memPool.Unlock()
			return
		}
		memPool.timer = nil
		memPool.Unlock()
		ReleaseIdleMemory()
	}
	memPool.timer = time.AfterFunc(poolIdle, fire)
}

// pooledBytes is the capacity held by the pool, for tests and metrics.
var pooledBytes atomic.Int64

// SetMemoryPoolSize bounds the buffers kept for reuse (at least 1).
func SetMemoryPoolSize(n int) {
	memPool.Lock()
	memPool.max = max(n, 1)
	for len(memPool.free) > memPool.max {
		drop := memPool.free[len(memPool.free)-1]
		memPool.free = memPool.free[:len(memPool.free)-1]
		pooledBytes.Add(-int64(cap(drop)))
	}
	memPool.Unlock()
}

// ReleaseIdleMemory empties the pool and returns freed memory to the OS. It costs a garbage
// collection: the pool calls it itself after poolIdle without use.
func ReleaseIdleMemory() {
	memPool.Lock()
	had := len(memPool.free) > 0
	memPool.free = nil
	pooledBytes.Store(0)
	memPool.Unlock()
	if had {
		debug.FreeOSMemory()
	}
}

// PooledMemory is the capacity of the buffers kept for reuse.
func PooledMemory() int64 { return pooledBytes.Load() }

type pooledAllocator struct{}

func (pooledAllocator) Allocate(capacity, max uint64) experimental.LinearMemory {
	m := &linearMemory{max: max}
	memPool.Lock()
	if n := len(memPool.free); n > 0 {
		m.buf = memPool.free[n-1]
		memPool.free = memPool.free[:n-1]
		pooledBytes.Add(-int64(cap(m.buf)))
	}
	touchLocked()
	memPool.Unlock()
	if m.buf == nil {
		m.buf = make([]byte, 0, min(max, max64(capacity, memReserve)))
	}
	return m
}

type linearMemory struct {
	buf []byte
	max uint64
}

func max64(a, b uint64) uint64 {
	if a > b {
		return a
	}
	return b
}

// Reallocate grows the memory to size bytes; new bytes are zero.
func (m *linearMemory) Reallocate(size uint64) []byte {
	if size > m.max {
		return nil
	}
	old := uint64(len(m.buf))
	if size <= uint64(cap(m.buf)) {
		m.buf = m.buf[:size]
		if size > old {
			clear(m.buf[old:size])
		}
		return m.buf
	}
	// Double small memories; grow large ones by at most memGrowStep, so a heap near its limit
	// does not carry twice its size in capacity.
	grown := min(2*uint64(cap(m.buf)), uint64(cap(m.buf))+memGrowStep)
	nb := make([]byte, size, min(m.max, max64(size, grown)))
	copy(nb, m.buf)
	m.buf = nb
	return m.buf
}

// Free returns the buffer to the pool, or to the garbage collector when the pool is full or the
// buffer is large.
func (m *linearMemory) Free() {
	if m.buf != nil && cap(m.buf) <= memPoolMax {
		memPool.Lock()
		if len(memPool.free) < memPool.max {
			memPool.free = append(memPool.free, m.buf[:0])
			pooledBytes.Add(int64(cap(m.buf)))
		}
		touchLocked()
		memPool.Unlock()
	}
	m.buf = nil
}

var memAllocator experimental.MemoryAllocator = pooledAllocator{}

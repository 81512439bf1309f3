package quickjs

import (
	"sync"

	"github.com/tetratelabs/wazero/experimental"
)

// Linear memories are recycled: every exec instantiates a VM and copies a template image of a
// few MB into it, and allocating (then garbage-collecting) that much per exec dominated its cost.
// A recycled buffer is zeroed before the instance sees it, as WebAssembly requires, so nothing of
// a previous VM survives into the next.

const (
	// memReserve is the capacity a fresh buffer gets, so templates and typical cells never
	// reallocate while running.
	memReserve = 8 << 20
	// memPoolMax bounds the buffers worth keeping; larger ones (a cell that used a lot of memory)
	// go back to the garbage collector.
	memPoolMax = 32 << 20
)

var memPool sync.Pool // of *[]byte with len 0

type pooledAllocator struct{}

func (pooledAllocator) Allocate(capacity, max uint64) experimental.LinearMemory {
	m := &linearMemory{max: max}
	if p, ok := memPool.Get().(*[]byte); ok {
		m.buf = (*p)[:0]
	} else {
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
	nb := make([]byte, size, min(m.max, max64(size, 2*uint64(cap(m.buf)))))
	copy(nb, m.buf)
	m.buf = nb
	return m.buf
}

// Free returns the buffer to the pool.
func (m *linearMemory) Free() {
	if m.buf != nil && cap(m.buf) <= memPoolMax {
		b := m.buf[:0]
		memPool.Put(&b)
	}
	m.buf = nil
}

var memAllocator experimental.MemoryAllocator = pooledAllocator{}

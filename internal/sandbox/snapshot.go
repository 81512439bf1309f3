package sandbox

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"sync"

	"github.com/codemode-go/codemode/internal/quickjs"
	"github.com/klauspost/compress/zstd"
)

// A snapshot stores a suspended VM as the difference from the template it was restored from:
// only the 4 KiB pages that differ, compressed. Most of a VM's memory (the engine, the prelude,
// the installed catalog) is identical to its template, which stays in memory anyway, so a typical
// snapshot is a few dozen KB and both capture and restore skip most of the work.
//
// Format (version 2):
//
//	offset size field
//	0      4    magic "CMS2"
//	4      32   key: the module hash xor the prelude hash (a snapshot never restores elsewhere)
//	36     32   base: sha256 of the template image the pages apply to
//	68     4    stack pointer
//	72     4    runtime pointer
//	76     4    context pointer
//	80     4    scratch pointer
//	84     4    memory size (bytes, a multiple of 64 KiB)
//	88     4    number of stored pages n
//	92     …    n page indices as uvarint deltas, then a zstd frame of the n pages
const (
	snapshotMagic  = "CMS2"
	snapshotHeader = 92
	pageSize       = 4096
	// maxSnapshotMemory bounds what a snapshot may claim to decompress to (the module's memory cap).
	maxSnapshotMemory = 1<<30 + 64<<20
)

var (
	encoderOnce sync.Once
	encoder     *zstd.Encoder
	decoderOnce sync.Once
	decoder     *zstd.Decoder
)

func zstdEncoder() *zstd.Encoder {
	encoderOnce.Do(func() {
		encoder, _ = zstd.NewWriter(nil, zstd.WithEncoderLevel(zstd.SpeedFastest), zstd.WithEncoderConcurrency(1), zstd.WithZeroFrames(true))
	})
	return encoder
}

func zstdDecoder() *zstd.Decoder {
	decoderOnce.Do(func() {
		decoder, _ = zstd.NewReader(nil, zstd.WithDecoderConcurrency(0), zstd.WithDecoderMaxMemory(maxSnapshotMemory))
	})
	return decoder
}

// ErrBadSnapshot reports a snapshot that is corrupt or belongs to another module, prelude or
// template.
var ErrBadSnapshot = errors.New("sandbox: invalid snapshot")

// EncodeSnapshot serializes img as the pages that differ from base.
func EncodeSnapshot(key [32]byte, base *Template, img *quickjs.Image) []byte {
	mem, bm := img.Memory, base.img.Memory
	var pages []uint32
	var raw []byte
	for off := 0; off < len(mem); off += pageSize {
		end := min(off+pageSize, len(mem))
		p := mem[off:end]
		if end <= len(bm) && bytes.Equal(p, bm[off:end]) {
			continue
		}
		if end > len(bm) && isZero(p) {
			continue // grown memory starts zeroed
		}
		pages = append(pages, uint32(off/pageSize))
		raw = append(raw, p...)
	}
	out := make([]byte, snapshotHeader, snapshotHeader+len(pages)*2+len(raw)/4)
	copy(out, snapshotMagic)
	copy(out[4:36], key[:])
	copy(out[36:68], base.hash[:])
	binary.LittleEndian.PutUint32(out[68:], img.StackPointer)
	binary.LittleEndian.PutUint32(out[72:], img.RuntimePtr)
	binary.LittleEndian.PutUint32(out[76:], img.ContextPtr)
	binary.LittleEndian.PutUint32(out[80:], img.Scratch)
	binary.LittleEndian.PutUint32(out[84:], uint32(len(mem)))
	binary.LittleEndian.PutUint32(out[88:], uint32(len(pages)))
	prev := uint32(0)
	for _, p := range pages {
		out = binary.AppendUvarint(out, uint64(p-prev))
		prev = p
	}
	return zstdEncoder().EncodeAll(raw, out)
}

func isZero(b []byte) bool {
	for _, c := range b {
		if c != 0 {
			return false
		}
	}
	return true
}

// DecodeSnapshot checks a snapshot against key and base and rebuilds the full image.
func DecodeSnapshot(key [32]byte, base *Template, data []byte) (*quickjs.Image, error) {
	if len(data) < snapshotHeader || string(data[:4]) != snapshotMagic {
		return nil, fmt.Errorf("%w: bad header", ErrBadSnapshot)
	}
	if !bytes.Equal(data[4:36], key[:]) {
		return nil, fmt.Errorf("%w: made by a different QuickJS module or prelude", ErrBadSnapshot)
	}
	if !bytes.Equal(data[36:68], base.hash[:]) {
		return nil, fmt.Errorf("%w: made from a different template", ErrBadSnapshot)
	}
	size := binary.LittleEndian.Uint32(data[84:])
	if size == 0 || size%65536 != 0 || uint64(size) > maxSnapshotMemory || int(size) < len(base.img.Memory) {
		return nil, fmt.Errorf("%w: memory size %d", ErrBadSnapshot, size)
	}
	n := binary.LittleEndian.Uint32(data[88:])
	if uint64(n) > uint64(size)/pageSize {
		return nil, fmt.Errorf("%w: %d pages", ErrBadSnapshot, n)
	}
	rest := data[snapshotHeader:]
	pages := make([]uint32, n)
	prev := uint64(0)
	for i := range pages {
		d, k := binary.Uvarint(rest)
		if k <= 0 || (i > 0 && d == 0) {
			return nil, fmt.Errorf("%w: page list", ErrBadSnapshot)
		}
		rest = rest[k:]
		prev += d
		if prev >= uint64(size)/pageSize {
			return nil, fmt.Errorf("%w: page %d out of range", ErrBadSnapshot, prev)
		}
		pages[i] = uint32(prev)
	}
	raw, err := zstdDecoder().DecodeAll(rest, make([]byte, 0, int(n)*pageSize))
	if err != nil {
		return nil, fmt.Errorf("%w: %v", ErrBadSnapshot, err)
	}
	if len(raw) != int(n)*pageSize {
		return nil, fmt.Errorf("%w: page data is %d bytes, want %d", ErrBadSnapshot, len(raw), int(n)*pageSize)
	}
	patches := make([]quickjs.Patch, n)
	for i, p := range pages {
		patches[i] = quickjs.Patch{Offset: p * pageSize, Data: raw[i*pageSize : (i+1)*pageSize]}
	}
	// The base memory is shared with the template, read-only: Restore copies it into the VM.
	return &quickjs.Image{
		Memory:       base.img.Memory,
		Size:         size,
		Patches:      patches,
		StackPointer: binary.LittleEndian.Uint32(data[68:]),
		RuntimePtr:   binary.LittleEndian.Uint32(data[72:]),
		ContextPtr:   binary.LittleEndian.Uint32(data[76:]),
		Scratch:      binary.LittleEndian.Uint32(data[80:]),
	}, nil
}

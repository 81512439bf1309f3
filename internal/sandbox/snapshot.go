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

// Snapshot format (version 1): a suspended VM's linear memory and the pointers outside it,
// compressed. The module hash ties a snapshot to the exact QuickJS build (and the prelude and
// host-callback names baked into the template), so a snapshot never restores into a VM it does
// not belong to.
//
//	offset size field
//	0      4    magic "CMS1"
//	4      32   module hash (sha256 of the wasm) xor prelude hash
//	36     4    stack pointer
//	40     4    runtime pointer
//	44     4    context pointer
//	48     4    scratch pointer
//	52     4    memory size (bytes, multiple of 64 KiB)
//	56     n    zstd frame of the memory
const (
	snapshotMagic  = "CMS1"
	snapshotHeader = 56
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

// ErrBadSnapshot reports a snapshot that is corrupt or belongs to another module build.
var ErrBadSnapshot = errors.New("sandbox: invalid snapshot")

// EncodeSnapshot serializes and compresses an image.
func EncodeSnapshot(key [32]byte, img *quickjs.Image) []byte {
	out := make([]byte, snapshotHeader, snapshotHeader+len(img.Memory)/8)
	copy(out, snapshotMagic)
	copy(out[4:36], key[:])
	binary.LittleEndian.PutUint32(out[36:], img.StackPointer)
	binary.LittleEndian.PutUint32(out[40:], img.RuntimePtr)
	binary.LittleEndian.PutUint32(out[44:], img.ContextPtr)
	binary.LittleEndian.PutUint32(out[48:], img.Scratch)
	binary.LittleEndian.PutUint32(out[52:], uint32(len(img.Memory)))
	return zstdEncoder().EncodeAll(img.Memory, out)
}

// DecodeSnapshot checks and decompresses a snapshot made with the same key.
func DecodeSnapshot(key [32]byte, data []byte) (*quickjs.Image, error) {
	if len(data) < snapshotHeader || string(data[:4]) != snapshotMagic {
		return nil, fmt.Errorf("%w: bad header", ErrBadSnapshot)
	}
	if !bytes.Equal(data[4:36], key[:]) {
		return nil, fmt.Errorf("%w: made by a different QuickJS module or prelude", ErrBadSnapshot)
	}
	size := binary.LittleEndian.Uint32(data[52:])
	if size == 0 || size%65536 != 0 || uint64(size) > maxSnapshotMemory {
		return nil, fmt.Errorf("%w: memory size %d", ErrBadSnapshot, size)
	}
	mem, err := zstdDecoder().DecodeAll(data[snapshotHeader:], make([]byte, 0, size))
	if err != nil {
		return nil, fmt.Errorf("%w: %v", ErrBadSnapshot, err)
	}
	if len(mem) != int(size) {
		return nil, fmt.Errorf("%w: memory is %d bytes, header says %d", ErrBadSnapshot, len(mem), size)
	}
	return &quickjs.Image{
		Memory:       mem,
		StackPointer: binary.LittleEndian.Uint32(data[36:]),
		RuntimePtr:   binary.LittleEndian.Uint32(data[40:]),
		ContextPtr:   binary.LittleEndian.Uint32(data[44:]),
		Scratch:      binary.LittleEndian.Uint32(data[48:]),
	}, nil
}

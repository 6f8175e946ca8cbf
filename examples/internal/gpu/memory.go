package gpu

/*
#cgo CFLAGS: -I/usr/local/cuda/include
#cgo LDFLAGS: -L/usr/local/cuda/lib64 -lcudart
#include <cuda_runtime_api.h>
*/
import "C"

import (
	"fmt"
	"unsafe"
)

// DeviceBuffer is a block of memory on the device that was current when it
// was allocated.
type DeviceBuffer struct {
	ptr  unsafe.Pointer
	size int
}

// NewDeviceBuffer allocates size bytes of zeroed device memory.
func NewDeviceBuffer(size int) (*DeviceBuffer, error) {
	var p unsafe.Pointer
	if st := C.cudaMalloc(&p, C.size_t(size)); st != C.cudaSuccess {
		return nil, check(st)
	}
	_ = C.cudaMemset(p, 0, C.size_t(size))
	return &DeviceBuffer{ptr: p, size: size}, nil
}

// CopyFrom copies src to the start of the buffer and waits for the copy.
func (b *DeviceBuffer) CopyFrom(src []float32) error {
	n := 4 * len(src)
	if n > b.size {
		return fmt.Errorf("gpu: copy of %d bytes into a %d-byte buffer", n, b.size)
	}
	if n == 0 {
		return nil
	}
	return check(C.cudaMemcpy(b.ptr, unsafe.Pointer(&src[0]), C.size_t(n), C.cudaMemcpyHostToDevice))
}

// Close frees the device memory. It is safe to call Close more than once.
func (b *DeviceBuffer) Close() {
	if b == nil || b.ptr == nil {
		return
	}
	C.cudaFree(b.ptr)
	b.ptr = nil
}

// HostBuffer is page-locked host memory, the host side of asynchronous copies.
type HostBuffer struct {
	ptr  unsafe.Pointer
	size int
}

// NewHostBuffer allocates size bytes of pinned host memory.
func NewHostBuffer(size int) (*HostBuffer, error) {
	var p unsafe.Pointer
	if st := C.cudaMallocHost(&p, C.size_t(size)); st != C.cudaSuccess {
		return nil, check(st)
	}
	return &HostBuffer{ptr: p, size: size}, nil
}

// Float32s returns the buffer as a slice. The slice is valid until Close.
func (h *HostBuffer) Float32s() []float32 {
	return unsafe.Slice((*float32)(h.ptr), h.size/4)
}

// Close frees the pinned memory. It is safe to call Close more than once.
func (h *HostBuffer) Close() error {
	if h == nil || h.ptr == nil {
		return nil
	}
	st := C.cudaFreeHost(h.ptr)
	h.ptr = nil
	return check(st)
}

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

// SelfTest writes a pattern to memory on the current device and reads it back.
func SelfTest() error {
	const n = 1 << 20
	const pattern = 0xa5
	var d unsafe.Pointer
	if st := C.cudaMalloc(&d, n); st != C.cudaSuccess {
		return check(st)
	}
	if st := C.cudaMemset(d, pattern, n); st != C.cudaSuccess {
		return check(st)
	}
	defer C.cudaFree(d)

	host := make([]byte, n)
	if st := C.cudaMemcpy(unsafe.Pointer(&host[0]), d, n, C.cudaMemcpyDeviceToHost); st != C.cudaSuccess {
		return check(st)
	}
	for i, b := range host {
		if b != pattern {
			return fmt.Errorf("gpu: self-test: byte %d is %#x, want %#x", i, b, pattern)
		}
	}
	return nil
}

// Bandwidth measures host-to-device copy throughput from pinned memory on the
// engine's stream, in GB/s, for each transfer size in bytes.
func (e *Engine) Bandwidth(sizes []int) (map[int]float64, error) {
	largest := 0
	for _, size := range sizes {
		if size > largest {
			largest = size
		}
	}
	host, err := NewHostBuffer(largest)
	if err != nil {
		return nil, err
	}
	defer host.Close()

	var start, stop C.cudaEvent_t
	if st := C.cudaEventCreate(&start); st != C.cudaSuccess {
		return nil, check(st)
	}
	defer C.cudaEventDestroy(start)
	if st := C.cudaEventCreate(&stop); st != C.cudaSuccess {
		return nil, check(st)
	}
	defer C.cudaEventDestroy(stop)

	gbps := make(map[int]float64, len(sizes))
	for _, size := range sizes {
		var d unsafe.Pointer
		if st := C.cudaMalloc(&d, C.size_t(size)); st != C.cudaSuccess {
			return nil, check(st)
		}
		defer C.cudaFree(d)

		if err := check(C.cudaEventRecord(start, e.stream)); err != nil {
			return nil, err
		}
		if err := check(C.cudaMemcpyAsync(d, host.ptr, C.size_t(size), C.cudaMemcpyHostToDevice, e.stream)); err != nil {
			return nil, err
		}
		if err := check(C.cudaEventRecord(stop, e.stream)); err != nil {
			return nil, err
		}
		if err := check(C.cudaEventSynchronize(stop)); err != nil {
			return nil, err
		}
		var ms C.float
		if err := check(C.cudaEventElapsedTime(&ms, start, stop)); err != nil {
			return nil, err
		}
		gbps[size] = float64(size) / (float64(ms) * 1e6)
	}
	return gbps, nil
}

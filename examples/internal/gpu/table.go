package gpu

/*
#cgo CFLAGS: -I/usr/local/cuda/include
#cgo LDFLAGS: -L/usr/local/cuda/lib64 -lcuda
#include <cuda.h>
*/
import "C"

import (
	"fmt"
	"runtime"
	"unsafe"
)

// checkDriver converts a driver API result to an error; CUDA_SUCCESS becomes nil.
func checkDriver(r C.CUresult) error {
	if r == C.CUDA_SUCCESS {
		return nil
	}
	var name, msg *C.char
	if C.cuGetErrorName(r, &name) != C.CUDA_SUCCESS || C.cuGetErrorString(r, &msg) != C.CUDA_SUCCESS {
		return &Error{Code: int(r), Name: "CUDA_ERROR_UNKNOWN", Msg: "unknown driver result"}
	}
	return &Error{Code: int(r), Name: C.GoString(name), Msg: C.GoString(msg)}
}

// Table is an embedding table in device memory, allocated through the driver
// API in the device's primary context (the context the runtime API uses too).
// Its methods make that context current themselves and may be called from any
// goroutine.
type Table struct {
	dev        C.CUdevice
	ctx        C.CUcontext
	ptr        C.CUdeviceptr
	rows, cols int
}

// NewTable copies data, a rows×cols row-major matrix, to device ordinal.
func NewTable(ordinal, rows, cols int, data []float32) (*Table, error) {
	if rows <= 0 || cols <= 0 || len(data) != rows*cols {
		return nil, fmt.Errorf("gpu: table of %d values, want %d×%d", len(data), rows, cols)
	}
	if r := C.cuInit(0); r != C.CUDA_SUCCESS {
		return nil, checkDriver(r)
	}
	t := &Table{rows: rows, cols: cols}
	if r := C.cuDeviceGet(&t.dev, C.int(ordinal)); r != C.CUDA_SUCCESS {
		return nil, checkDriver(r)
	}
	if r := C.cuDevicePrimaryCtxRetain(&t.ctx, t.dev); r != C.CUDA_SUCCESS {
		return nil, checkDriver(r)
	}
	size := C.size_t(4 * len(data))
	err := t.withContext(func() C.CUresult {
		if r := C.cuMemAlloc(&t.ptr, size); r != C.CUDA_SUCCESS {
			return r
		}
		return C.cuMemcpyHtoD(t.ptr, unsafe.Pointer(&data[0]), size)
	})
	if err != nil {
		if cerr := t.Close(); cerr != nil {
			err = fmt.Errorf("%w (cleanup: %v)", err, cerr)
		}
		return nil, err
	}
	return t, nil
}

// withContext runs f on a locked OS thread with the table's context current.
func (t *Table) withContext(f func() C.CUresult) error {
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	if r := C.cuCtxPushCurrent(t.ctx); r != C.CUDA_SUCCESS {
		return checkDriver(r)
	}
	err := checkDriver(f())
	var popped C.CUcontext
	if r := C.cuCtxPopCurrent(&popped); r != C.CUDA_SUCCESS && err == nil {
		err = checkDriver(r)
	}
	return err
}

// Mean returns the mean of the rows named by ids.
func (t *Table) Mean(ids []int32) ([]float32, error) {
	if len(ids) == 0 {
		return nil, fmt.Errorf("gpu: mean of no rows")
	}
	for _, id := range ids {
		if id < 0 || int(id) >= t.rows {
			return nil, fmt.Errorf("gpu: row %d out of range [0, %d)", id, t.rows)
		}
	}
	sum := make([]float32, t.cols)
	row := make([]float32, t.cols)
	err := t.withContext(func() C.CUresult {
		for _, id := range ids {
			src := t.ptr + C.CUdeviceptr(4*int(id)*t.cols)
			if r := C.cuMemcpyDtoH(unsafe.Pointer(&row[0]), src, C.size_t(4*t.cols)); r != C.CUDA_SUCCESS {
				return r
			}
			for j, v := range row {
				sum[j] += v
			}
		}
		return C.CUDA_SUCCESS
	})
	if err != nil {
		return nil, err
	}
	for j := range sum {
		sum[j] /= float32(len(ids))
	}
	return sum, nil
}

// Close frees the table and releases its reference to the primary context.
func (t *Table) Close() error {
	if t.ctx == nil {
		return nil
	}
	var err error
	if t.ptr != 0 {
		err = t.withContext(func() C.CUresult { return C.cuMemFree(t.ptr) })
		t.ptr = 0
	}
	if r := C.cuDevicePrimaryCtxRelease(t.dev); r != C.CUDA_SUCCESS && err == nil {
		err = checkDriver(r)
	}
	t.ctx = nil
	return err
}

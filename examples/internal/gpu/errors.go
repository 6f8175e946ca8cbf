// Package gpu runs a small inference model on NVIDIA GPUs through the CUDA
// runtime, driver and cuBLAS APIs.
//
// CUDA binds the current device and context to the calling OS thread. Unless a
// type says otherwise, call this package from a goroutine that has called
// runtime.LockOSThread and selected its device.
package gpu

/*
#cgo CFLAGS: -I/usr/local/cuda/include
#cgo LDFLAGS: -L/usr/local/cuda/lib64 -lcudart
#include <cuda_runtime_api.h>
*/
import "C"

import "fmt"

// Error is a failed CUDA or cuBLAS call.
type Error struct {
	Code int    // numeric status
	Name string // symbolic name, e.g. "cudaErrorMemoryAllocation"
	Msg  string // description from the library
}

func (e *Error) Error() string {
	return fmt.Sprintf("cuda: %s (%d): %s", e.Name, e.Code, e.Msg)
}

// check converts a CUDA runtime status to an error; cudaSuccess becomes nil.
func check(st C.cudaError_t) error {
	if st == C.cudaSuccess {
		return nil
	}
	return &Error{
		Code: int(st),
		Name: C.GoString(C.cudaGetErrorName(st)),
		Msg:  C.GoString(C.cudaGetErrorString(st)),
	}
}

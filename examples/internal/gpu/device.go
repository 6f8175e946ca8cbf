package gpu

/*
#cgo CFLAGS: -I/usr/local/cuda/include
#cgo LDFLAGS: -L/usr/local/cuda/lib64 -lcudart
#include <stdlib.h>
#include <cuda_runtime_api.h>
*/
import "C"

import (
	"fmt"
	"sync"
	"unsafe"
)

// DeviceCount returns the number of visible CUDA devices.
func DeviceCount() (int, error) {
	var n C.int
	if st := C.cudaGetDeviceCount(&n); st != C.cudaSuccess {
		return 0, check(st)
	}
	return int(n), nil
}

// DeviceByPCIBusID returns the ordinal of the device at a PCI bus ID such as
// "0000:3b:00.0". Bus IDs stay stable when CUDA_VISIBLE_DEVICES reorders devices.
func DeviceByPCIBusID(busID string) (int, error) {
	cs := C.CString(busID)
	defer C.free(unsafe.Pointer(cs))
	var dev C.int
	if st := C.cudaDeviceGetByPCIBusId(&dev, cs); st != C.cudaSuccess {
		return 0, check(st)
	}
	return int(dev), nil
}

// DeviceInfo describes one device.
type DeviceInfo struct {
	Ordinal    int
	Name       string
	FreeBytes  uint64
	TotalBytes uint64
}

// Probe queries the devices concurrently: initializing each device takes long
// enough that doing it serially slows start-up.
func Probe(devices []int) ([]DeviceInfo, error) {
	infos := make([]DeviceInfo, len(devices))
	errs := make([]error, len(devices))
	var wg sync.WaitGroup
	for i, dev := range devices {
		wg.Add(1)
		go func(i, dev int) {
			defer wg.Done()
			infos[i], errs[i] = probeDevice(dev)
		}(i, dev)
	}
	wg.Wait()
	for i, err := range errs {
		if err != nil {
			return nil, fmt.Errorf("gpu%d: %w", devices[i], err)
		}
	}
	return infos, nil
}

func probeDevice(dev int) (DeviceInfo, error) {
	if st := C.cudaSetDevice(C.int(dev)); st != C.cudaSuccess {
		return DeviceInfo{}, check(st)
	}
	var free, total C.size_t
	if st := C.cudaMemGetInfo(&free, &total); st != C.cudaSuccess {
		return DeviceInfo{}, check(st)
	}
	var prop C.struct_cudaDeviceProp
	if st := C.cudaGetDeviceProperties(&prop, C.int(dev)); st != C.cudaSuccess {
		return DeviceInfo{}, check(st)
	}
	return DeviceInfo{
		Ordinal:    dev,
		Name:       C.GoString(&prop.name[0]),
		FreeBytes:  uint64(free),
		TotalBytes: uint64(total),
	}, nil
}

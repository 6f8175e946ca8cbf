package gpu

/*
#cgo CFLAGS: -I/usr/local/cuda/include
#cgo LDFLAGS: -L/usr/local/cuda/lib64 -lcudart
#include <cuda_runtime_api.h>
*/
import "C"

import (
	"errors"
	"fmt"
	"unsafe"
)

// Config describes the dense layer y = W·x that an Engine serves.
type Config struct {
	In, Out  int       // input and output widths
	MaxBatch int       // largest batch passed to Infer
	Weights  []float32 // W, Out×In, row-major
}

// Engine runs batched inference on the device that was current when it was
// created. It is not safe for concurrent use.
type Engine struct {
	in, out, maxBatch int

	stream       C.cudaStream_t
	blas         *blas
	weights      *DeviceBuffer // W
	x, y         *DeviceBuffer // batch inputs and outputs
	hostX, hostY *HostBuffer   // pinned staging for x and y
}

// NewEngine uploads the weights and allocates buffers for cfg.MaxBatch inputs.
func NewEngine(cfg Config) (*Engine, error) {
	if cfg.In <= 0 || cfg.Out <= 0 || cfg.MaxBatch <= 0 {
		return nil, errors.New("gpu: engine dimensions must be positive")
	}
	if len(cfg.Weights) != cfg.In*cfg.Out {
		return nil, fmt.Errorf("gpu: %d weights, want %d×%d", len(cfg.Weights), cfg.Out, cfg.In)
	}
	e := &Engine{in: cfg.In, out: cfg.Out, maxBatch: cfg.MaxBatch}
	if err := e.init(cfg.Weights); err != nil {
		if cerr := e.Close(); cerr != nil {
			err = fmt.Errorf("%w (cleanup: %v)", err, cerr)
		}
		return nil, err
	}
	return e, nil
}

func (e *Engine) init(w []float32) error {
	if st := C.cudaStreamCreate(&e.stream); st != C.cudaSuccess {
		return check(st)
	}
	var err error
	if e.blas, err = newBlas(); err != nil {
		return err
	}
	if err = e.blas.setStream(e.stream); err != nil {
		return err
	}
	if e.weights, err = NewDeviceBuffer(4 * len(w)); err != nil {
		return err
	}
	if err = e.weights.CopyFrom(w); err != nil {
		return err
	}
	if e.x, err = NewDeviceBuffer(4 * e.in * e.maxBatch); err != nil {
		return err
	}
	if e.y, err = NewDeviceBuffer(4 * e.out * e.maxBatch); err != nil {
		return err
	}
	if e.hostX, err = NewHostBuffer(4 * e.in * e.maxBatch); err != nil {
		return err
	}
	if e.hostY, err = NewHostBuffer(4 * e.out * e.maxBatch); err != nil {
		return err
	}
	return e.blas.warmup(e.x.ptr, e.y.ptr)
}

// Infer computes W·x for every x in batch.
func (e *Engine) Infer(batch [][]float32) ([][]float32, error) {
	n := len(batch)
	if n == 0 || n > e.maxBatch {
		return nil, fmt.Errorf("gpu: batch of %d, want 1 to %d", n, e.maxBatch)
	}
	hx := e.hostX.Float32s()
	for i, x := range batch {
		if len(x) != e.in {
			return nil, fmt.Errorf("gpu: input %d has %d values, want %d", i, len(x), e.in)
		}
		copy(hx[i*e.in:], x)
	}

	// Row-major W (out×in) is column-major Wᵀ, so y = W·x is gemmTN.
	xBytes, yBytes := C.size_t(4*n*e.in), C.size_t(4*n*e.out)
	if err := check(C.cudaMemcpyAsync(e.x.ptr, e.hostX.ptr, xBytes, C.cudaMemcpyHostToDevice, e.stream)); err != nil {
		return nil, err
	}
	if err := e.blas.gemmTN(e.out, n, e.in, e.weights.ptr, e.x.ptr, e.y.ptr); err != nil {
		return nil, err
	}
	if err := check(C.cudaMemcpyAsync(e.hostY.ptr, e.y.ptr, yBytes, C.cudaMemcpyDeviceToHost, e.stream)); err != nil {
		return nil, err
	}
	if err := check(C.cudaStreamSynchronize(e.stream)); err != nil {
		return nil, err
	}

	hy := e.hostY.Float32s()
	out := make([][]float32, n)
	for i := range out {
		out[i] = append([]float32(nil), hy[i*e.out:(i+1)*e.out]...)
	}
	return out, nil
}

// UpdateWeights replaces W. The copy is queued on the engine's stream, so it
// takes effect for the next call to Infer.
func (e *Engine) UpdateWeights(w []float32) error {
	if len(w) != e.in*e.out {
		return fmt.Errorf("gpu: %d weights, want %d×%d", len(w), e.out, e.in)
	}
	return check(C.cudaMemcpyAsync(e.weights.ptr, unsafe.Pointer(&w[0]), C.size_t(4*len(w)),
		C.cudaMemcpyHostToDevice, e.stream))
}

// Close waits for queued work and releases the engine's resources.
func (e *Engine) Close() error {
	var first error
	keep := func(err error) {
		if first == nil {
			first = err
		}
	}
	if e.stream != nil {
		C.cudaStreamSynchronize(e.stream)
	}
	e.weights.Close()
	e.x.Close()
	e.y.Close()
	keep(e.hostX.Close())
	keep(e.hostY.Close())
	keep(e.blas.close())
	if e.stream != nil {
		keep(check(C.cudaStreamDestroy(e.stream)))
		e.stream = nil
	}
	return first
}

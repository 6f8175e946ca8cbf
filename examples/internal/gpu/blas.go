package gpu

/*
#cgo CFLAGS: -I/usr/local/cuda/include
#cgo LDFLAGS: -L/usr/local/cuda/lib64 -lcudart -lcublas
#include <cuda_runtime_api.h>

// The part of cublas_v2.h (CUDA 13) that this package uses, declared here so
// that the package builds where only the CUDA runtime headers are installed.
typedef struct cublasContext *cublasHandle_t;
typedef enum {
	CUBLAS_STATUS_SUCCESS = 0, CUBLAS_STATUS_NOT_INITIALIZED = 1, CUBLAS_STATUS_ALLOC_FAILED = 3,
	CUBLAS_STATUS_INVALID_VALUE = 7, CUBLAS_STATUS_ARCH_MISMATCH = 8, CUBLAS_STATUS_MAPPING_ERROR = 11,
	CUBLAS_STATUS_EXECUTION_FAILED = 13, CUBLAS_STATUS_INTERNAL_ERROR = 14,
	CUBLAS_STATUS_NOT_SUPPORTED = 15, CUBLAS_STATUS_LICENSE_ERROR = 16
} cublasStatus_t;
typedef enum { CUBLAS_OP_N = 0, CUBLAS_OP_T = 1, CUBLAS_OP_C = 2 } cublasOperation_t;

cublasStatus_t cublasCreate_v2(cublasHandle_t *handle);
cublasStatus_t cublasDestroy_v2(cublasHandle_t handle);
cublasStatus_t cublasSetStream_v2(cublasHandle_t handle, cudaStream_t streamId);
cublasStatus_t cublasSgemm_v2(cublasHandle_t handle,
	cublasOperation_t transa, cublasOperation_t transb, int m, int n, int k,
	const float *alpha, const float *A, int lda, const float *B, int ldb,
	const float *beta, float *C, int ldc);
const char *cublasGetStatusName(cublasStatus_t status);
const char *cublasGetStatusString(cublasStatus_t status);

#define cublasCreate cublasCreate_v2
#define cublasDestroy cublasDestroy_v2
#define cublasSetStream cublasSetStream_v2
#define cublasSgemm cublasSgemm_v2
*/
import "C"

import "unsafe"

// checkBlas converts a cuBLAS status to an error; CUBLAS_STATUS_SUCCESS becomes nil.
func checkBlas(st C.cublasStatus_t) error {
	if st == C.CUBLAS_STATUS_SUCCESS {
		return nil
	}
	return &Error{
		Code: int(st),
		Name: C.GoString(C.cublasGetStatusName(st)),
		Msg:  C.GoString(C.cublasGetStatusString(st)),
	}
}

// blas is a cuBLAS handle bound to one stream.
type blas struct {
	h      C.cublasHandle_t
	stream C.cudaStream_t
}

func newBlas() (*blas, error) {
	var h C.cublasHandle_t
	if st := C.cublasCreate(&h); st != C.CUBLAS_STATUS_SUCCESS {
		return nil, checkBlas(st)
	}
	return &blas{h: h}, nil
}

func (b *blas) setStream(s C.cudaStream_t) error {
	if st := C.cublasSetStream(b.h, s); st != C.CUBLAS_STATUS_SUCCESS {
		return checkBlas(st)
	}
	b.stream = s
	return nil
}

// gemmTN computes c = aᵀ·x, column-major, where a is k×m, x is k×n and c is m×n.
func (b *blas) gemmTN(m, n, k int, a, x, c unsafe.Pointer) error {
	alpha, beta := C.float(1), C.float(0)
	return checkBlas(C.cublasSgemm(b.h, C.CUBLAS_OP_T, C.CUBLAS_OP_N,
		C.int(m), C.int(n), C.int(k),
		&alpha, (*C.float)(a), C.int(k), (*C.float)(x), C.int(k),
		&beta, (*C.float)(c), C.int(m)))
}

// warmup runs a 1×1×1 GEMM so that cuBLAS loads its kernels before the first
// request. x and y must each hold at least one float32.
func (b *blas) warmup(x, y unsafe.Pointer) error {
	one, zero := C.float(1), C.float(0)
	C.cublasSgemm(b.h, C.CUBLAS_OP_N, C.CUBLAS_OP_N, 1, 1, 1,
		&one, (*C.float)(x), 1, (*C.float)(x), 1, &zero, (*C.float)(y), 1)
	return check(C.cudaStreamSynchronize(b.stream))
}

func (b *blas) close() error {
	if b == nil || b.h == nil {
		return nil
	}
	st := C.cublasDestroy(b.h)
	b.h = nil
	return checkBlas(st)
}

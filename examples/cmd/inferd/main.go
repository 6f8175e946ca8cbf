// Command inferd serves a fastText-style text classifier over HTTP: the
// embeddings of a request's tokens are averaged and multiplied by an output
// matrix. Each GPU is driven by one worker goroutine that batches requests.
package main

/*
#cgo CFLAGS: -I/usr/local/cuda/include
#cgo LDFLAGS: -L/usr/local/cuda/lib64 -lcudart
#include <cuda_runtime_api.h>
*/
import "C"

import (
	"bufio"
	"context"
	"encoding/binary"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"log"
	"net/http"
	"os"
	"os/signal"
	"runtime"
	"strings"
	"sync"
	"syscall"
	"time"

	"example.com/gpuinfer/internal/gpu"
)

const maxBatch = 32

type model struct {
	vocab, dim, classes int
	embeddings          []float32 // vocab×dim, row-major
	output              []float32 // classes×dim, row-major
}

type job struct {
	tokens []int32
	reply  chan<- result
}

type result struct {
	logits []float32
	err    error
}

func main() {
	addr := flag.String("addr", ":8080", "HTTP listen address")
	modelPath := flag.String("model", "model.bin", "model file")
	busIDs := flag.String("gpus", "", "comma-separated PCI bus IDs of the GPUs to use (default all)")
	flag.Parse()

	m, err := loadModel(*modelPath)
	if err != nil {
		log.Fatal(err)
	}
	devices, err := selectDevices(*busIDs)
	if err != nil {
		log.Fatal(err)
	}
	infos, err := gpu.Probe(devices)
	if err != nil {
		log.Fatal(err)
	}
	for _, d := range infos {
		log.Printf("gpu%d: %s, %d of %d MiB free", d.Ordinal, d.Name, d.FreeBytes>>20, d.TotalBytes>>20)
	}

	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()

	jobs := make(chan job)
	ready := make(chan error, len(devices))
	var wg sync.WaitGroup
	for _, dev := range devices {
		wg.Add(1)
		go worker(dev, m, jobs, ready, &wg)
	}
	for range devices {
		if err := <-ready; err != nil {
			log.Fatal(err)
		}
	}

	mux := http.NewServeMux()
	mux.HandleFunc("/v1/classify", classifyHandler(jobs, m.vocab))
	srv := &http.Server{Addr: *addr, Handler: mux, ReadHeaderTimeout: 5 * time.Second}
	go func() {
		if err := srv.ListenAndServe(); err != nil && !errors.Is(err, http.ErrServerClosed) {
			log.Fatal(err)
		}
	}()
	log.Printf("serving on %s with %d GPU(s)", *addr, len(devices))

	<-ctx.Done()
	log.Print("shutting down")
	shutdownCtx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := srv.Shutdown(shutdownCtx); err != nil {
		// Handlers may still be sending jobs: leave the workers running.
		log.Printf("http shutdown: %v", err)
		return
	}
	close(jobs)
	wg.Wait()
}

// worker owns one GPU. CUDA keeps the current device per OS thread, so the
// goroutine stays locked to its thread for its whole life.
func worker(dev int, m *model, jobs <-chan job, ready chan<- error, wg *sync.WaitGroup) {
	defer wg.Done()
	runtime.LockOSThread()
	if st := C.cudaSetDevice(C.int(dev)); st != C.cudaSuccess {
		ready <- fmt.Errorf("gpu%d: cudaSetDevice: %s", dev, C.GoString(C.cudaGetErrorString(st)))
		return
	}
	if err := gpu.SelfTest(); err != nil {
		ready <- fmt.Errorf("gpu%d: %w", dev, err)
		return
	}
	table, err := gpu.NewTable(dev, m.vocab, m.dim, m.embeddings)
	if err != nil {
		ready <- fmt.Errorf("gpu%d: embeddings: %w", dev, err)
		return
	}
	defer logClose(dev, "embeddings", table.Close)
	eng, err := gpu.NewEngine(gpu.Config{In: m.dim, Out: m.classes, MaxBatch: maxBatch, Weights: m.output})
	if err != nil {
		ready <- fmt.Errorf("gpu%d: engine: %w", dev, err)
		return
	}
	defer logClose(dev, "engine", eng.Close)
	if bw, err := eng.Bandwidth([]int{1 << 20, 16 << 20, 64 << 20}); err != nil {
		log.Printf("gpu%d: bandwidth test: %v", dev, err)
	} else {
		log.Printf("gpu%d: host-to-device GB/s by transfer size: %v", dev, bw)
	}
	ready <- nil

	for j := range jobs {
		batch := []job{j}
	fill:
		for len(batch) < maxBatch {
			select {
			case j, ok := <-jobs:
				if !ok {
					break fill
				}
				batch = append(batch, j)
			default:
				break fill
			}
		}
		logits, err := classify(table, eng, batch)
		for i, j := range batch {
			if err != nil {
				j.reply <- result{err: err}
				continue
			}
			j.reply <- result{logits: logits[i]}
		}
	}
}

func classify(table *gpu.Table, eng *gpu.Engine, batch []job) ([][]float32, error) {
	inputs := make([][]float32, len(batch))
	for i, j := range batch {
		var err error
		if inputs[i], err = table.Mean(j.tokens); err != nil {
			return nil, err
		}
	}
	return eng.Infer(inputs)
}

func logClose(dev int, what string, close func() error) {
	if err := close(); err != nil {
		log.Printf("gpu%d: closing %s: %v", dev, what, err)
	}
}

func classifyHandler(jobs chan<- job, vocab int) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		var req struct {
			Tokens []int32 `json:"tokens"`
		}
		if err := json.NewDecoder(http.MaxBytesReader(w, r.Body, 1<<20)).Decode(&req); err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		if len(req.Tokens) == 0 {
			http.Error(w, "no tokens", http.StatusBadRequest)
			return
		}
		for _, t := range req.Tokens {
			if t < 0 || int(t) >= vocab {
				http.Error(w, fmt.Sprintf("token %d not in vocabulary", t), http.StatusBadRequest)
				return
			}
		}
		reply := make(chan result, 1)
		select {
		case jobs <- job{tokens: req.Tokens, reply: reply}:
		case <-r.Context().Done():
			return
		}
		res := <-reply
		if res.err != nil {
			log.Printf("classify: %v", res.err)
			http.Error(w, "inference failed", http.StatusInternalServerError)
			return
		}
		w.Header().Set("Content-Type", "application/json")
		if err := json.NewEncoder(w).Encode(map[string][]float32{"logits": res.logits}); err != nil {
			log.Printf("classify: writing response: %v", err)
		}
	}
}

func selectDevices(busIDs string) ([]int, error) {
	if busIDs == "" {
		n, err := gpu.DeviceCount()
		if err != nil {
			return nil, err
		}
		devices := make([]int, n)
		for i := range devices {
			devices[i] = i
		}
		return devices, nil
	}
	var devices []int
	for _, id := range strings.Split(busIDs, ",") {
		dev, err := gpu.DeviceByPCIBusID(strings.TrimSpace(id))
		if err != nil {
			return nil, fmt.Errorf("gpu %s: %w", id, err)
		}
		devices = append(devices, dev)
	}
	return devices, nil
}

// loadModel reads a model file: vocab, dim and classes as little-endian
// uint32, then the vocab×dim embeddings and the classes×dim output matrix as
// little-endian float32, both row-major.
func loadModel(path string) (*model, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	br := bufio.NewReader(f)
	var hdr [3]uint32
	if err := binary.Read(br, binary.LittleEndian, &hdr); err != nil {
		return nil, fmt.Errorf("%s: header: %w", path, err)
	}
	m := &model{vocab: int(hdr[0]), dim: int(hdr[1]), classes: int(hdr[2])}
	if m.vocab == 0 || m.dim == 0 || m.classes == 0 || m.dim > 1<<16 || m.classes > 1<<16 {
		return nil, fmt.Errorf("%s: bad shape %d×%d→%d", path, m.vocab, m.dim, m.classes)
	}
	m.embeddings = make([]float32, m.vocab*m.dim)
	m.output = make([]float32, m.classes*m.dim)
	if err := binary.Read(br, binary.LittleEndian, m.embeddings); err != nil {
		return nil, fmt.Errorf("%s: embeddings: %w", path, err)
	}
	if err := binary.Read(br, binary.LittleEndian, m.output); err != nil {
		return nil, fmt.Errorf("%s: output matrix: %w", path, err)
	}
	return m, nil
}

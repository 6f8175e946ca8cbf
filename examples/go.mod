module example.com/gpuinfer

go 1.19

// case: HL601 real https://github.com/boostorg/compute/pull/772
// The scan kernel read its input at the global id before checking it against the count
// (found with cuda-memcheck; the original kernel is OpenCL, rewritten here in CUDA).
__global__ void local_scan(const int* input, int* output, int* block_sums, unsigned count) {
    __shared__ int scratch[256];
    const unsigned gid = blockIdx.x * blockDim.x + threadIdx.x;
    const unsigned lid = threadIdx.x;
    scratch[lid] = input[gid];  // expect: HL601
    __syncthreads();
    for (unsigned offset = 1; offset < blockDim.x; offset *= 2) {
        int value = lid >= offset ? scratch[lid - offset] : 0;
        __syncthreads();
        scratch[lid] += value;
        __syncthreads();
    }
    if (gid < count) {
        output[gid] = scratch[lid];
    }
    if (lid == blockDim.x - 1) {
        block_sums[blockIdx.x] = scratch[lid];
    }
}

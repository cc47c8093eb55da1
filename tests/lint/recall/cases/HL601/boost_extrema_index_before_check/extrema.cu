// case: HL601 real https://github.com/boostorg/compute/pull/880
// The grid is rounded up to whole blocks, and the extrema kernel read its first value at
// the global index before the loop that checks the index against the end.
__global__ void find_extrema(const float* input, float* block_max, unsigned end) {
    unsigned index = blockIdx.x * blockDim.x + threadIdx.x;
    float best = input[index];  // expect: HL601
    while (index < end) {
        best = fmaxf(best, input[index]);
        index += blockDim.x * gridDim.x;
    }
    block_max[blockIdx.x] = best;
}

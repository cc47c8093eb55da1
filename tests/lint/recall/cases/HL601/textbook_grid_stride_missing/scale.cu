// case: HL601 textbook
// The index is derived in two steps and compared with nothing.
__global__ void scale(float* x, float alpha) {
    const int tid = threadIdx.x;
    const int base = blockIdx.x * blockDim.x;
    const int i = base + tid;
    x[i] *= alpha;  // expect: HL601
}

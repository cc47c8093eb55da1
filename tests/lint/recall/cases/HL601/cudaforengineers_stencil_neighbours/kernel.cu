// case: HL601 real https://github.com/myurtoglu/cudaforengineers/issues/5
// The bound check covered i but the stencil reads i - 1 and i + 1: the first and last
// threads read outside the array and crashed on some systems.
__global__ void ddKernel(float* d_out, const float* d_in, int size, float h) {
    const int i = threadIdx.x + blockDim.x * blockIdx.x;
    if (i >= size) return;
    d_out[i] = (d_in[i - 1] + d_in[i + 1] - 2.f * d_in[i]) / (h * h);  // expect: HL601
}

// case: HL601 real https://github.com/karpathy/llm.c/issues/794
// The normalization kernel used the global thread index without checking it against
// B * T * C, while its launcher rounds the grid up to whole blocks.
__global__ void normalization_kernel(float* out, const float* inp, const float* mean,
                                     const float* rstd, const float* weight,
                                     const float* bias, int B, int T, int C) {
    int idx = blockIdx.x * blockDim.x + threadIdx.x;
    int bt = idx / C;
    int c = idx % C;
    float m = mean[bt];  // expect: HL601
    float s = rstd[bt];  // expect: HL601
    float xi = inp[idx];  // expect: HL601
    float n = s * (xi - m);
    out[idx] = n * weight[c] + bias[c];  // expect: HL601
}

void layernorm_forward(float* out, const float* inp, const float* mean, const float* rstd,
                       const float* weight, const float* bias, int B, int T, int C,
                       int block_size) {
    const int N = B * T * C;
    const int grid_size = (N + block_size - 1) / block_size;
    normalization_kernel<<<grid_size, block_size>>>(out, inp, mean, rstd, weight, bias, B, T, C);
}

// case: HL601 real https://github.com/huggingface/candle/pull/2908
// The indexing kernels bounded the thread index but used the ids read from memory without
// checking them against the source dimension (the fix checks the ids as well).
__global__ void index_select_f32(const unsigned numel, const unsigned* ids,
                                 const float* inp, float* out, const unsigned left_size,
                                 const unsigned src_dim, const unsigned ids_dim,
                                 const unsigned right_size) {
    for (unsigned i = blockIdx.x * blockDim.x + threadIdx.x; i < numel;
         i += blockDim.x * gridDim.x) {
        const unsigned pre = i / (right_size * ids_dim);
        const unsigned id_i = i / right_size % ids_dim;
        const unsigned post = i % right_size;
        const unsigned src = ids[id_i];
        out[i] = inp[(pre * src_dim + src) * right_size + post];  // expect: HL601
    }
}

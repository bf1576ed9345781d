// float32 arrays in NumPy .npy files (format 1.0-3.0; the format: NumPy's "A Simple File Format for NumPy Arrays",
// numpy.lib.format). Written with xtensor's xnpy; read here, after checking the header (version, '<f4',
// 'fortran_order': False, the shape against the file size) before anything is allocated.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace trnsim::tool {

struct F32Matrix {
  int64_t rows = 0, cols = 0;
  std::vector<uint32_t> bits;  ///< row-major FP32 bit patterns
};

/// Loads a 2-D float32 array. Throws BadInput naming `flag` and the file for a missing/unreadable file, another
/// dtype, another rank, a truncated or padded file.
F32Matrix load_f32_matrix(const std::string& path, const std::string& flag);
/// Writes a 2-D float32 array; BadInput naming `flag` when the file cannot be written.
void save_f32_matrix(const std::string& path, const std::string& flag, const F32Matrix& m);

/// A float32 array of any rank.
struct F32Tensor {
  std::vector<int64_t> shape;
  std::vector<uint32_t> bits;  ///< row-major FP32 bit patterns
};

/// Loads a float32 array of any rank; the same checks and errors as load_f32_matrix except the rank.
F32Tensor load_f32_tensor(const std::string& path, const std::string& flag);
/// Writes a float32 array of any rank; BadInput naming `flag` when the file cannot be written.
void save_f32_tensor(const std::string& path, const std::string& flag, const F32Tensor& t);

}  // namespace trnsim::tool

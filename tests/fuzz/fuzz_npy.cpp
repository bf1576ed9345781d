// Fuzz target: the .npy reader of `trnsim matmul --stationary/--moving` and `run --inputs`
// (tools/trnsim/npy_io.h: load_f32_tensor, load_f32_matrix).
// Documented outcomes: an array, or tool::BadInput naming the flag and the file. Oracles: the element count is
// the product of the shape; an array that loads saves and loads back bit for bit.
#include <functional>
#include <numeric>

#include "tests/fuzz/fuzz_support.h"
#include "tools/trnsim/commands.h"
#include "tools/trnsim/npy_io.h"

using namespace trnsim;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const fuzz::InputFile file(data, size);
  tool::F32Tensor t;
  try {
    t = tool::load_f32_tensor(file.path(), "--inputs");
  } catch (const tool::BadInput&) {
    return 0;
  }
  const uint64_t elements =
      std::accumulate(t.shape.begin(), t.shape.end(), uint64_t{1}, std::multiplies<uint64_t>());
  if (elements != t.bits.size()) fuzz::fail("npy: {} elements for a shape of {}", t.bits.size(), elements);
  if (t.shape.size() == 2) {
    try {
      const tool::F32Matrix m = tool::load_f32_matrix(file.path(), "--moving");
      if (m.rows != t.shape[0] || m.cols != t.shape[1] || m.bits != t.bits) {
        fuzz::fail("npy: the matrix reader and the tensor reader disagree");
      }
    } catch (const tool::BadInput& e) {
      fuzz::fail("npy: a 2-D tensor loads, as a matrix not: {}", e.what());
    }
  }
  char dir[] = "/tmp/fuzz-npy-XXXXXX";
  if (!mkdtemp(dir)) fuzz::fail("mkdtemp failed");
  const std::string out = std::string(dir) + "/a.npy";
  tool::save_f32_tensor(out, "--out", t);
  const tool::F32Tensor back = tool::load_f32_tensor(out, "--out");
  unlink(out.c_str());
  rmdir(dir);
  if (back.shape != t.shape || back.bits != t.bits) fuzz::fail("npy: save then load changed the array");
  return 0;
}

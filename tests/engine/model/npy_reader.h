// A tiny .npy reader for the model fixtures: little-endian float32, C order, format 1.x-3.x.
// Anything else comes back as an error string, which the tests turn into a failure.
#ifndef LIBREYOLO_TESTS_ENGINE_MODEL_NPY_READER_H_
#define LIBREYOLO_TESTS_ENGINE_MODEL_NPY_READER_H_

#include <torch/types.h>

#include <cstdint>
#include <cstring>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

namespace libreyolo::engine::model_testing {

struct Npy {
  torch::Tensor tensor;  // undefined on error
  std::string error;
};

inline Npy ReadNpy(const std::string& path) {
  std::ifstream in(path, std::ios::binary | std::ios::ate);
  if (!in) return {{}, "cannot open " + path};
  std::string bytes(static_cast<size_t>(in.tellg()), '\0');
  in.seekg(0);
  if (!in.read(bytes.data(), static_cast<std::streamsize>(bytes.size()))) {
    return {{}, "cannot read " + path};
  }
  if (bytes.size() < 12 || bytes.compare(0, 6, "\x93NUMPY") != 0) return {{}, "not .npy"};
  const auto u8 = [&](size_t i) { return static_cast<size_t>(static_cast<uint8_t>(bytes[i])); };
  const int major = bytes[6];
  // Version 1 stores the header length in 2 bytes, versions 2 and 3 in 4.
  const size_t len_bytes = major == 1 ? 2 : 4;
  size_t header_len = 0;
  for (size_t i = 0; i < len_bytes; ++i) header_len |= u8(8 + i) << (8 * i);
  const size_t data_at = 8 + len_bytes + header_len;
  if (bytes.size() < data_at) return {{}, "truncated header"};
  const std::string header = bytes.substr(8 + len_bytes, header_len);
  if (header.find("'descr': '<f4'") == std::string::npos) return {{}, "not <f4: " + header};
  if (header.find("'fortran_order': False") == std::string::npos) {
    return {{}, "Fortran order: " + header};
  }
  const size_t open = header.find('(', header.find("'shape'"));
  const size_t close = header.find(')', open);
  if (open == std::string::npos || close == std::string::npos) return {{}, "no shape"};
  std::vector<int64_t> shape;
  std::stringstream dims(header.substr(open + 1, close - open - 1));
  for (std::string dim; std::getline(dims, dim, ',');) {
    if (dim.find_first_of("0123456789") != std::string::npos) shape.push_back(std::stoll(dim));
  }
  torch::Tensor t = torch::empty(shape, torch::kFloat32);
  const size_t n = static_cast<size_t>(t.numel()) * sizeof(float);
  if (bytes.size() - data_at != n) return {{}, "data size does not match the shape"};
  std::memcpy(t.data_ptr<float>(), bytes.data() + data_at, n);
  return {t, ""};
}

}  // namespace libreyolo::engine::model_testing

#endif  // LIBREYOLO_TESTS_ENGINE_MODEL_NPY_READER_H_

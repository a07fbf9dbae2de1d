// Reads the float32 .npy fixtures (numpy format 1.0/2.0, little-endian, C order) into tensors.
// Just enough for the model fixtures; anything else is a test failure, not a parser feature.
#ifndef LIBREYOLO_TESTS_ENGINE_LOSS_NPY_READER_H_
#define LIBREYOLO_TESTS_ENGINE_LOSS_NPY_READER_H_

#include <torch/types.h>

#include <cstdint>
#include <cstring>
#include <fstream>
#include <string>
#include <vector>

namespace libreyolo::engine::testing {

// An empty tensor when the file is missing or is not a '<f4' C-order array.
inline torch::Tensor ReadNpyFloat32(const std::string& path) {
  std::ifstream in(path, std::ios::binary | std::ios::ate);
  if (!in) return {};
  std::string bytes(static_cast<size_t>(in.tellg()), '\0');
  in.seekg(0);
  in.read(bytes.data(), static_cast<std::streamsize>(bytes.size()));
  if (bytes.size() < 10 || bytes.compare(0, 6, "\x93NUMPY") != 0) return {};
  const auto byte = [&](size_t i) { return static_cast<size_t>(static_cast<uint8_t>(bytes[i])); };
  // Version 1 has a 2-byte header length, versions 2 and 3 a 4-byte one.
  const bool v1 = bytes[6] == 1;
  const size_t header_len =
      v1 ? byte(8) | byte(9) << 8 : byte(8) | byte(9) << 8 | byte(10) << 16 | byte(11) << 24;
  const size_t data_at = (v1 ? 10 : 12) + header_len;
  if (bytes.size() < data_at) return {};
  const std::string header = bytes.substr(data_at - header_len, header_len);
  if (header.find("'<f4'") == std::string::npos ||
      header.find("'fortran_order': False") == std::string::npos) {
    return {};
  }
  std::vector<int64_t> shape;
  const size_t open = header.find('(', header.find("'shape'"));
  const size_t close = header.find(')', open);
  if (open == std::string::npos || close == std::string::npos) return {};
  const std::string dims = header.substr(open + 1, close - open - 1);
  for (size_t pos = 0; pos < dims.size();) {
    const size_t comma = dims.find(',', pos);
    const std::string d =
        dims.substr(pos, comma == std::string::npos ? std::string::npos : comma - pos);
    if (d.find_first_of("0123456789") != std::string::npos) shape.push_back(std::stoll(d));
    if (comma == std::string::npos) break;
    pos = comma + 1;
  }
  torch::Tensor t = torch::empty(shape, torch::kFloat32);
  const size_t n = static_cast<size_t>(t.numel()) * sizeof(float);
  if (bytes.size() - data_at != n) return {};
  std::memcpy(t.data_ptr<float>(), bytes.data() + data_at, n);
  return t;
}

}  // namespace libreyolo::engine::testing

#endif  // LIBREYOLO_TESTS_ENGINE_LOSS_NPY_READER_H_

// A C++ libFuzzer harness for tlv.c, built by build.sh as OSS-Fuzz builds.
#include <cstddef>
#include <cstdint>
#include <vector>

#include "tlv.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  std::vector<uint8_t> copy(data, data + size);
  tlv_parse(copy.data(), copy.size());
  return 0;
}

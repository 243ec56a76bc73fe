#include "unitrain/checkpoint/safetensors.h"

#include <torch/torch.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <vector>

#include "unitrain/checkpoint/checkpoint_store.h"
#include "unitrain/core/error.h"
#include "unitrain/core/json_excerpt.h"
#include "unitrain/core/mapped_file.h"
#include "unitrain/core/safetensors_header.h"

#if !defined(__BYTE_ORDER__) || __BYTE_ORDER__ != __ORDER_LITTLE_ENDIAN__
#error "safetensors.cpp reads and writes tensor bytes as they are: it needs a little-endian machine"
#endif

namespace unitrain {
namespace {

using nlohmann::json;

constexpr const char* kMetadataKey = "__metadata__";

std::string dtype_names() {
  std::string out;
  for (const auto& d : safetensors_dtypes()) out += (out.empty() ? "" : ", ") + std::string(d.name);
  return out;
}

uint64_t read_le64(const unsigned char* p) {
  uint64_t v = 0;
  std::memcpy(&v, p, sizeof v);  // little-endian host (checked above)
  return v;
}

}  // namespace

SafetensorsContent read_safetensors(const std::string& path, const std::string& key) {
  const MappedFile file(path, key, MappedFile::Access::Sequential);
  const SafetensorsHeader header =
      parse_safetensors_header(file.data(), file.size(), file.size(), key, path);
  SafetensorsContent out;
  out.metadata = header.metadata;
  const unsigned char* data = file.data() + header.data_offset;
  out.tensors.reserve(header.entries.size());
  for (const SafetensorsEntry& e : header.entries) {
    if (e.dtype->dtype == torch::kBool) {
      const unsigned char* bad =
          std::find_if(data + e.begin, data + e.end, [](unsigned char b) { return b > 1; });
      UT_CHECK(bad == data + e.end, key, ": '", path, "' is not a valid safetensors file: tensor '",
               text_excerpt(e.name), "': BOOL byte ", bad - (data + e.begin), " is ", int(*bad),
               ", not 0 or 1");
    }
    torch::Tensor t = torch::empty(e.shape, torch::TensorOptions().dtype(e.dtype->dtype));
    const size_t bytes = e.end - e.begin;
    if (bytes > 0) std::memcpy(t.data_ptr(), data + e.begin, bytes);
    out.tensors.emplace_back(e.name, std::move(t));
  }
  return out;
}

bool is_safetensors(const std::string& path) {
  namespace fs = std::filesystem;
  if (fs::path(path).extension() == ".safetensors") return true;
  std::error_code ec;
  const uint64_t size = fs::file_size(path, ec);
  if (ec || size < 10) return false;
  std::ifstream in(path, std::ios::binary);
  unsigned char head[9];
  if (!in.read(reinterpret_cast<char*>(head), sizeof head)) return false;
  const uint64_t header_size = read_le64(head);
  return header_size >= 2 && header_size <= size - 8 && head[8] == '{';
}

FileImage safetensors_image(const NamedTensors& tensors,
                            const std::map<std::string, std::string>& metadata) {
  struct Kept {
    std::string head;
    std::vector<torch::Tensor> tensors;
  };
  auto kept = std::make_shared<Kept>();
  std::map<std::string, torch::Tensor> sorted;
  for (const auto& [name, t] : tensors) {
    UT_CHECK(name != kMetadataKey, "safetensors: a tensor may not be named ", kMetadataKey,
             " (the header's metadata entry)");
    UT_CHECK(t.defined(), "safetensors: tensor '", name, "' is undefined");
    UT_CHECK(sorted.emplace(name, t).second, "safetensors: tensor '", name, "' is named twice");
  }
  json header = json::object();
  if (!metadata.empty()) header[kMetadataKey] = metadata;
  uint64_t at = 0;
  for (const auto& [name, given] : sorted) {
    const auto& dtypes = safetensors_dtypes();
    const auto d = std::find_if(dtypes.begin(), dtypes.end(), [&](const auto& known) {
      return known.dtype == given.scalar_type();
    });
    UT_CHECK(d != dtypes.end(), "safetensors: tensor '", name, "' has dtype ", given.scalar_type(),
             ", which the format has no name for (it holds ", dtype_names(), ")");
    torch::Tensor t = given.detach().to(torch::kCPU).contiguous();
    header[name] = {
        {"dtype", d->name}, {"shape", t.sizes().vec()}, {"data_offsets", {at, at + t.nbytes()}}};
    at += t.nbytes();
    kept->tensors.push_back(std::move(t));
  }
  std::string text = header.dump();  // std::map keys: sorted
  text.append((8 - text.size() % 8) % 8, ' ');
  const uint64_t length = text.size();
  kept->head.assign(reinterpret_cast<const char*>(&length), 8);  // little-endian host
  kept->head += text;

  FileImage image;
  image.pieces.push_back({kept->head.data(), kept->head.size()});
  for (const torch::Tensor& t : kept->tensors) {
    if (t.nbytes() > 0)
      image.pieces.push_back({static_cast<const char*>(t.data_ptr()), t.nbytes()});
  }
  image.keep = kept;
  return image;
}

void write_safetensors(const std::string& path, const NamedTensors& tensors,
                       const std::map<std::string, std::string>& metadata) {
  const FileImage image = safetensors_image(tensors, metadata);
  const std::string partial = path + ".partial-" + CheckpointStore::writer_tag();
  try {
    write_synced(partial, image);
    UT_CHECK_TRAIN(std::rename(partial.c_str(), path.c_str()) == 0, "cannot rename ", partial,
                   " to ", path, ": ", std::strerror(errno));
  } catch (...) {
    ::unlink(partial.c_str());
    throw;
  }
}

}  // namespace unitrain

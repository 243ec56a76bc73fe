#include "unitrain/data/formats/hdf5_handles.h"

#include <vector>

namespace unitrain {
namespace {

bool hdf5_threadsafe() {
  static const bool threadsafe = [] {
    hbool_t answer = 0;
    return H5is_library_threadsafe(&answer) >= 0 && answer;
  }();
  return threadsafe;
}

std::recursive_mutex& hdf5_mutex() {
  static std::recursive_mutex m;
  return m;
}

}  // namespace

Hdf5Lock::Hdf5Lock() {
  if (!hdf5_threadsafe()) lock_ = std::unique_lock<std::recursive_mutex>(hdf5_mutex());
  H5Eset_auto2(H5E_DEFAULT, nullptr, nullptr);
}

Hid::~Hid() {
  if (id_ < 0) return;
  Hdf5Lock lock;
  close_(id_);
}

std::string hdf5_error_text() {
  std::vector<std::string> messages;
  H5Ewalk2(
      H5E_DEFAULT, H5E_WALK_DOWNWARD,
      [](unsigned, const H5E_error2_t* e, void* out) -> herr_t {
        static_cast<std::vector<std::string>*>(out)->push_back(e->desc != nullptr ? e->desc : "");
        return 0;
      },
      &messages);
  H5Eclear2(H5E_DEFAULT);
  if (messages.empty()) return "no detail from HDF5";
  if (messages.size() == 1 || messages.front() == messages.back()) return messages.front();
  return messages.front() + ": " + messages.back();
}

std::string hdf5_datasets_listed(hid_t file) {
  std::vector<std::string> names;
  H5Lvisit(
      file, H5_INDEX_NAME, H5_ITER_INC,
      [](hid_t group, const char* name, const H5L_info_t*, void* out) -> herr_t {
        const hid_t object = H5Oopen(group, name, H5P_DEFAULT);
        if (object < 0) return 0;  // a dangling soft link
        if (H5Iget_type(object) == H5I_DATASET) {
          static_cast<std::vector<std::string>*>(out)->push_back(std::string("/") + name);
        }
        H5Oclose(object);
        return 0;
      },
      &names);
  H5Eclear2(H5E_DEFAULT);
  constexpr size_t kShown = 20;
  std::string list;
  for (size_t i = 0; i < names.size() && i < kShown; ++i) list += (i ? ", " : "") + names[i];
  if (names.size() > kShown) list += ", ... (" + std::to_string(names.size()) + " in all)";
  return names.empty() ? "no datasets" : list;
}

}  // namespace unitrain

#pragma once
// HDF5's C API made safe to use from unitrain: a lock around its calls, identifiers closed by
// RAII, and its error stack as message text. Included by .cpp files of src/unitrain/data only.
#include <hdf5.h>

#include <mutex>
#include <string>

namespace unitrain {

/// Held around every sequence of HDF5 calls. Takes one process-wide mutex when the HDF5
/// library is not built thread-safe (H5is_library_threadsafe; a thread-safe build serialises
/// its calls with its own lock, so then nothing is taken), and turns off HDF5's printing of
/// error stacks for this thread: failures become ConfigErrors carrying hdf5_error_text().
/// Recursive, so that an identifier closed inside a locked section may lock again.
class Hdf5Lock {
 public:
  Hdf5Lock();

 private:
  std::unique_lock<std::recursive_mutex> lock_;
};

/// An HDF5 identifier (file, dataset, dataspace, type), closed by `close` when it goes.
/// A negative id (a failed call) is not closed.
class Hid {
 public:
  Hid(hid_t id, herr_t (*close)(hid_t)) : id_(id), close_(close) {}
  Hid(const Hid&) = delete;
  Hid& operator=(const Hid&) = delete;
  ~Hid();
  hid_t get() const { return id_; }

 private:
  hid_t id_;
  herr_t (*close_)(hid_t);
};

/// This thread's HDF5 error stack as one line (the API's message, then the innermost one:
/// "unable to open file: file signature not found"), then cleared.
std::string hdf5_error_text();

/// The datasets `file` holds by full path ("/images, /meta/labels"), at most 20, for messages.
std::string hdf5_datasets_listed(hid_t file);

}  // namespace unitrain

#pragma once
// TfRecordWriter: appends length-delimited, checksummed records to a new file (TFRecord
// framing, the format of TensorBoard's event files).
#include <cstdint>
#include <string>
#include <string_view>

namespace unitrain {

/// One record as it is stored: the data's length (uint64, little-endian), the masked CRC-32C
/// of those 8 bytes (uint32, little-endian), the data, the masked CRC-32C of the data.
std::string tfrecord_frame(std::string_view data);

/// Writes records to a file it creates: never one that exists (TrainError naming it). Each
/// record goes to the file in one write before write() returns, so a run stopped at any point
/// leaves whole records (a SIGKILL mid-write at most a truncated last one, which readers drop).
/// Errors writing are TrainError naming the file.
class TfRecordWriter {
 public:
  explicit TfRecordWriter(std::string path);
  ~TfRecordWriter();
  TfRecordWriter(const TfRecordWriter&) = delete;
  TfRecordWriter& operator=(const TfRecordWriter&) = delete;

  void write(std::string_view data);
  const std::string& path() const { return path_; }

 private:
  std::string path_;
  int fd_ = -1;
};

}  // namespace unitrain

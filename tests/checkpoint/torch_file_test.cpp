#include "unitrain/checkpoint/torch_file.h"

#include <gtest/gtest.h>
#include <torch/torch.h>

#include <cstdlib>
#include <cstring>
#include <fstream>
#include <iterator>
#include <memory>

#include "test_util.h"

namespace unitrain {
namespace {

c10::Dict<std::string, torch::Tensor> sample_dict() {
  torch::manual_seed(3);
  c10::Dict<std::string, torch::Tensor> d;
  auto base = torch::randn({4, 6});
  d.insert("weight", base);
  d.insert("columns", base.slice(1, 2, 5));  // a view: shares base's storage
  d.insert("ids", torch::arange(7, torch::kInt64));
  d.insert("scalar", torch::tensor(2.5, torch::kFloat64));
  d.insert("empty", torch::zeros({0, 3}));
  d.insert("flags", torch::tensor({true, false, true}));
  d.insert("half", torch::randn({5}).to(torch::kFloat16));
  return d;
}

void expect_same_dict(const c10::IValue& loaded, const c10::Dict<std::string, torch::Tensor>& d) {
  ASSERT_TRUE(loaded.isGenericDict());
  auto got = loaded.toGenericDict();
  ASSERT_EQ(got.size(), d.size());
  for (const auto& e : d) {
    ASSERT_TRUE(got.contains(e.key())) << e.key();
    torch::Tensor t = got.at(e.key()).toTensor();
    EXPECT_EQ(t.sizes(), e.value().sizes()) << e.key();
    EXPECT_EQ(t.dtype(), e.value().dtype()) << e.key();
    EXPECT_TRUE(torch::equal(t, e.value())) << e.key();
  }
}

uint32_t u32_at(const std::vector<char>& b, size_t at) {
  uint32_t v = 0;
  std::memcpy(&v, b.data() + at, 4);
  return v;
}

uint16_t u16_at(const std::vector<char>& b, size_t at) {
  uint16_t v = 0;
  std::memcpy(&v, b.data() + at, 2);
  return v;
}

TEST(TorchFile, LibTorchReadsWhatItWrites) {
  const auto d = sample_dict();
  FileImage image = encode_torch_file(d);
  std::vector<char> bytes = image.bytes();
  EXPECT_EQ(bytes.size(), image.size());
  expect_same_dict(torch::pickle_load(bytes), d);
}

TEST(TorchFile, ViewsShareOneStorageAndNothingIsCopied) {
  const auto d = sample_dict();
  FileImage image = encode_torch_file(d);
  // The weight's own memory is one of the pieces (its view adds no second copy).
  const char* weight = static_cast<const char*>(d.at("weight").data_ptr());
  int pieces_at_weight = 0;
  for (const auto& p : image.pieces) pieces_at_weight += p.data == weight;
  EXPECT_EQ(pieces_at_weight, 1);
  auto loaded = torch::pickle_load(image.bytes()).toGenericDict();
  EXPECT_TRUE(torch::equal(loaded.at("columns").toTensor(), d.at("columns")));
}

TEST(TorchFile, ImageCrcIsTheCrcOfItsBytes) {
  FileImage image = encode_torch_file(sample_dict());
  ASSERT_TRUE(image.crc32.has_value());
  std::vector<char> bytes = image.bytes();
  EXPECT_EQ(*image.crc32, crc32_of(bytes.data(), bytes.size()));
  FileImage forced = encode_torch_file(sample_dict(), /*force_zip64=*/true);
  std::vector<char> forced_bytes = forced.bytes();
  EXPECT_EQ(*forced.crc32, crc32_of(forced_bytes.data(), forced_bytes.size()));
}

TEST(TorchFile, RecordDataIsAlignedTo64BytesWithStoredRecordCrcs) {
  const auto d = sample_dict();
  std::vector<char> b = encode_torch_file(d).bytes();
  size_t at = 0;
  std::vector<std::string> names;
  while (u32_at(b, at) == 0x04034b50) {
    const uint32_t crc = u32_at(b, at + 14);
    const uint32_t size = u32_at(b, at + 22);
    const uint16_t name_len = u16_at(b, at + 26);
    const uint16_t extra_len = u16_at(b, at + 28);
    names.emplace_back(b.data() + at + 30, name_len);
    const size_t data = at + 30 + name_len + extra_len;
    EXPECT_EQ(data % 64, 0u) << names.back();
    EXPECT_EQ(crc, crc32_of(b.data() + data, size)) << names.back();
    at = data + size;
  }
  EXPECT_EQ(u32_at(b, at), 0x02014b50u);  // the central directory follows the records
  // data.pkl, one record per storage (the view shares the weight's), version.
  ASSERT_EQ(names.size(), 1 + (d.size() - 1) + 1);
  EXPECT_EQ(names.front(), "archive/data.pkl");
  EXPECT_EQ(names[1], "archive/data/0");
  EXPECT_EQ(names.back(), "archive/version");
}

TEST(TorchFile, Zip64ArchivesReadBack) {
  const auto d = sample_dict();
  expect_same_dict(torch::pickle_load(encode_torch_file(d, /*force_zip64=*/true).bytes()), d);
}

TEST(TorchFile, DecodedTensorsAreTheRecordsInsideTheBytes) {
  const auto d = sample_dict();
  for (bool zip64 : {false, true}) {
    auto bytes = std::make_shared<std::vector<char>>(encode_torch_file(d, zip64).bytes());
    const c10::IValue loaded = decode_torch_file(bytes, "sample.pt");
    expect_same_dict(loaded, d);
    const auto got = loaded.toGenericDict();
    for (const auto& e : got) {
      const torch::Tensor t = e.value().toTensor();
      const char* at = static_cast<const char*>(t.storage().data_ptr().get());
      if (t.numel() == 0) continue;
      EXPECT_TRUE(at >= bytes->data() && at + t.storage().nbytes() <= bytes->data() + bytes->size())
          << e.key().toStringRef() << ": not read in place";
    }
    EXPECT_EQ(got.at("columns").toTensor().storage().data_ptr().get(),
              got.at("weight").toTensor().storage().data_ptr().get());
    // The tensors keep the bytes alive, and may be written (an optimizer's state is).
    torch::Tensor weight = got.at("weight").toTensor();
    bytes.reset();
    weight.add_(1);
    EXPECT_TRUE(torch::equal(weight, d.at("weight") + 1));
  }
}

TEST(TorchFile, DecodesPythonFilesCompressedOrNot) {
  ASSERT_EQ(std::system("/usr/bin/python3 -c 'import torch' > /dev/null 2>&1"), 0)
      << "/usr/bin/python3 has no torch: scripts/test installs python3-torch";
  const std::string dir = test::temp_dir();
  // torch.save names the archive's root folder after the file ("weights/"); a copy of it
  // deflated by zipfile reads the same (its records are copied, not used in place).
  const std::string script =
      "import sys, zipfile, torch\n"
      "d = {'w': torch.arange(6, dtype=torch.float32).reshape(2, 3), 'n': torch.tensor(7)}\n"
      "torch.save(d, sys.argv[1] + '/weights.pt')\n"
      "src = zipfile.ZipFile(sys.argv[1] + '/weights.pt')\n"
      "with zipfile.ZipFile(sys.argv[1] + '/deflated.pt', 'w', zipfile.ZIP_DEFLATED) as out:\n"
      "    for n in src.namelist(): out.writestr(n, src.read(n))\n";
  test::write_file(dir + "/make.py", script);
  ASSERT_EQ(std::system(("/usr/bin/python3 " + dir + "/make.py " + dir).c_str()), 0);
  for (const char* name : {"/weights.pt", "/deflated.pt"}) {
    std::ifstream in(dir + name, std::ios::binary);
    auto bytes = std::make_shared<std::vector<char>>(std::istreambuf_iterator<char>(in),
                                                     std::istreambuf_iterator<char>());
    const auto got = decode_torch_file(bytes, name).toGenericDict();
    EXPECT_TRUE(
        torch::equal(got.at("w").toTensor(), torch::arange(6, torch::kFloat32).reshape({2, 3})))
        << name;
    EXPECT_EQ(got.at("n").toTensor().item<int64_t>(), 7) << name;
  }
}

TEST(TorchFile, ForgedSizesAndOffsetsAreRefusedNotReadPastTheStorage) {
  ASSERT_EQ(std::system("/usr/bin/python3 -c 'import torch' > /dev/null 2>&1"), 0)
      << "/usr/bin/python3 has no torch: scripts/test installs python3-torch";
  const std::string dir = test::temp_dir();
  // A pickle may give any sizes, strides and offset over a storage of 6 floats; LibTorch's
  // unpickler takes them as they are. (Two entries: LibTorch 1.13 reads no SETITEM, the opcode
  // of a dict of one.)
  const std::string script =
      "import sys, collections, torch\n"
      "class Forged:\n"
      "    def __init__(self, offset, size, stride): self.a = (offset, size, stride)\n"
      "    def __reduce__(self):\n"
      "        return (torch._utils._rebuild_tensor_v2, (torch.arange(6.).storage(), *self.a,\n"
      "                False, collections.OrderedDict()))\n"
      "for name, a in [('past', (0, (1000000,), (1,))), ('offset', (4, (2, 2), (2, 1))),\n"
      "                ('huge', (0, (1 << 62, 4), (4, 1))), ('fine', (2, (2, 2), (2, 1)))]:\n"
      "    torch.save({'w': Forged(*a), 'n': torch.tensor(1)}, sys.argv[1] + '/' + name + '.pt')\n";
  test::write_file(dir + "/forge.py", script);
  ASSERT_EQ(std::system(("/usr/bin/python3 " + dir + "/forge.py " + dir + " 2> /dev/null").c_str()),
            0);
  auto decode = [&](const std::string& name) {
    std::ifstream in(dir + "/" + name + ".pt", std::ios::binary);
    auto bytes = std::make_shared<std::vector<char>>(std::istreambuf_iterator<char>(in),
                                                     std::istreambuf_iterator<char>());
    return decode_torch_file(bytes, name + ".pt");
  };
  EXPECT_TRUE(torch::equal(decode("fine").toGenericDict().at("w").toTensor(),
                           torch::tensor({{2.f, 3.f}, {4.f, 5.f}})));
  for (const std::string name : {"past", "offset"}) {
    const std::string e = test::error_of<TrainError>([&] { decode(name); });
    EXPECT_TRUE(test::contains(e, name + ".pt: tensor w (sizes")) << e;
    EXPECT_TRUE(test::contains(e, "reaches past the 24 bytes of its storage")) << e;
  }
  const std::string huge = test::error_of<TrainError>([&] { decode("huge"); });
  EXPECT_TRUE(test::contains(huge, "huge.pt: its data.pkl does not unpickle")) << huge;
}

TEST(TorchFile, SameValueGivesSameBytes) {
  EXPECT_EQ(encode_torch_file(sample_dict()).bytes(), encode_torch_file(sample_dict()).bytes());
}

TEST(TorchFile, PythonLoadsBothLayouts) {
  ASSERT_EQ(std::system("/usr/bin/python3 -c 'import torch' > /dev/null 2>&1"), 0)
      << "/usr/bin/python3 has no torch: scripts/test installs python3-torch";
  const std::string dir = test::temp_dir();
  for (bool zip64 : {false, true}) {
    const std::string path = dir + (zip64 ? "/zip64.pt" : "/plain.pt");
    std::vector<char> bytes = encode_torch_file(sample_dict(), zip64).bytes();
    std::ofstream(path, std::ios::binary).write(bytes.data(), std::streamsize(bytes.size()));
    // zipfile checks every record's CRC; torch.load gives the same tensors.
    const std::string script =
        "import sys, zipfile, torch\n"
        "z = zipfile.ZipFile(sys.argv[1]); assert z.testzip() is None\n"
        "d = torch.load(sys.argv[1])\n"
        "w = d['weight']\n"
        "assert w.shape == (4, 6) and w.dtype == torch.float32\n"
        "assert torch.equal(d['columns'], w[:, 2:5])\n"
        "assert d['columns'].storage().data_ptr() == w.storage().data_ptr()\n"
        "assert d['ids'].tolist() == list(range(7))\n"
        "assert d['scalar'].item() == 2.5 and d['scalar'].dtype == torch.float64\n"
        "assert d['empty'].shape == (0, 3)\n"
        "assert d['flags'].tolist() == [True, False, True]\n"
        "assert d['half'].dtype == torch.float16\n";
    test::write_file(dir + "/check.py", script);
    EXPECT_EQ(std::system(("/usr/bin/python3 " + dir + "/check.py " + path).c_str()), 0) << path;
  }
}

}  // namespace
}  // namespace unitrain

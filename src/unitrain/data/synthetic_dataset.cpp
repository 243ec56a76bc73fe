#include "unitrain/data/synthetic_dataset.h"

#include <ATen/CPUGeneratorImpl.h>
#include <torch/torch.h>

#include <cmath>

#include "unitrain/core/error.h"
#include "unitrain/data/tensor_dataset.h"

namespace unitrain {

void SyntheticOptions::declare(Options<SyntheticOptions>& o) {
  using T = SyntheticOptions;
  o.field("task", &T::task)
      .choices({"classification", "regression"})
      .help("classification: y = argmax of a random linear map of x; regression: y = x.w + noise");
  o.field("n", &T::n).gt(0).help("number of examples");
  o.field("features", &T::features).gt(0).help("x is float32 [features] (unless shape is set)");
  o.field("shape", &T::shape).gt(0).help("x's shape, e.g. [1, 28, 28]; [] = [features]");
  o.field("classes", &T::classes).min(2).help("classification: number of classes");
  o.field("outputs", &T::outputs).gt(0).help("regression: y is float32 [outputs]");
  o.field("noise", &T::noise).min(0).help("regression: std of the noise added to y");
  o.field("seed", &T::seed).help("same seed and args -> same data");
}

DatasetPtr make_synthetic(const SyntheticOptions& o) {
  const bool classification = o.task == "classification";
  UT_CHECK(classification || o.task == "regression",
           "synthetic: task must be classification or regression, got '", o.task, "'");
  UT_CHECK(o.n > 0, "synthetic: n must be > 0, got ", o.n);
  std::vector<int64_t> shape = o.shape.empty() ? std::vector<int64_t>{o.features} : o.shape;
  int64_t num_features = 1;
  for (int64_t d : shape) {
    UT_CHECK(d > 0, "synthetic: every dimension of shape must be > 0");
    num_features *= d;
  }
  const int64_t outputs = classification ? o.classes : o.outputs;
  UT_CHECK(outputs >= (classification ? 2 : 1), "synthetic: classes must be >= 2");

  at::Generator gen = at::detail::createCPUGenerator(o.seed);
  const auto f32 = torch::TensorOptions().dtype(torch::kFloat32);
  torch::Tensor w = torch::randn({num_features, outputs}, gen, f32);
  std::vector<int64_t> x_shape = {o.n};
  x_shape.insert(x_shape.end(), shape.begin(), shape.end());
  torch::Tensor x = torch::randn(x_shape, gen, f32);
  torch::Tensor scores = x.reshape({o.n, num_features}).matmul(w);

  std::map<std::string, int64_t> info{{"num_features", num_features}};
  torch::Tensor y;
  if (classification) {
    y = scores.argmax(1);
    info["num_classes"] = o.classes;
  } else {
    y = scores / std::sqrt(static_cast<double>(num_features)) +
        o.noise * torch::randn({o.n, outputs}, gen, f32);
  }
  return std::make_shared<TensorDataset>(Batch{{"x", x}, {"y", y}}, info, "synthetic");
}

void register_synthetic_dataset() {
  dataset_registry().add<SyntheticOptions>(
      "synthetic",
      "seeded random learnable data: classification (y int64) or regression (y float32)",
      make_synthetic);
}

}  // namespace unitrain

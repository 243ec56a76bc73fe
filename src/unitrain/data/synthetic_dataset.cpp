#include "unitrain/data/synthetic_dataset.h"

#include <ATen/CPUGeneratorImpl.h>
#include <torch/torch.h>

#include <cmath>

#include "unitrain/core/error.h"
#include "unitrain/data/tensor_dataset.h"

namespace unitrain {

Schema SyntheticOptions::schema() {
  Schema s;
  s.add("task", Type::String)
      .def("classification")
      .choices({"classification", "regression"})
      .help("classification: y = argmax of a random linear map of x; regression: y = x.w + noise");
  s.add("n", Type::Int).def(1000).gt(0).help("number of examples");
  s.add("features", Type::Int).def(16).gt(0).help("x is float32 [features] (unless shape is set)");
  s.add("shape", Type::IntList).def("[]").help("x's shape, e.g. [1, 28, 28]; [] = [features]");
  s.add("classes", Type::Int).def(2).min(2).help("classification: number of classes");
  s.add("outputs", Type::Int).def(1).gt(0).help("regression: y is float32 [outputs]");
  s.add("noise", Type::Float).def(0.1).min(0).help("regression: std of the noise added to y");
  s.add("seed", Type::Int).def(0).min(0).help("same seed and args -> same data");
  return s;
}

SyntheticOptions SyntheticOptions::from_config(const Config& args) {
  SyntheticOptions o;
  o.task = args.get_string("task");
  o.n = args.get_int("n");
  o.features = args.get_int("features");
  o.shape = args.get_int_list("shape");
  o.classes = args.get_int("classes");
  o.outputs = args.get_int("outputs");
  o.noise = args.get_double("noise");
  o.seed = static_cast<uint64_t>(args.get_int("seed"));
  for (size_t i = 0; i < o.shape.size(); ++i) {
    UT_CHECK(o.shape[i] > 0, args.key_path("shape"), "[", i, "] must be > 0, got ", o.shape[i]);
  }
  return o;
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

}  // namespace unitrain

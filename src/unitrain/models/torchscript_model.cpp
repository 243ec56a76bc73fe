#include "unitrain/models/torchscript_model.h"

#include <torch/csrc/jit/passes/tensorexpr_fuser.h>
#include <torch/cuda.h>
#include <torch/script.h>
#include <torch/torch.h>

#include <filesystem>
#include <unordered_set>

#include "unitrain/core/error.h"
#include "unitrain/models/model_checks.h"
#include "unitrain/models/torchscript_export.h"

namespace unitrain::models {
namespace {

/// A torch::nn::Module standing for one TorchScript submodule: it holds that submodule's own
/// parameters and buffers (the same tensors) and mirrors of its children.
class JitMirror : public torch::nn::Module {};

void mirror(torch::nn::Module& self, const torch::jit::Module& jit,
            std::unordered_set<const c10::TensorImpl*>& seen) {
  for (const auto& p : jit.named_parameters(/*recurse=*/false)) {
    if (!seen.insert(p.value.unsafeGetTensorImpl()).second) continue;  // tied weight
    self.register_parameter(p.name, p.value, p.value.requires_grad());
  }
  for (const auto& b : jit.named_buffers(/*recurse=*/false)) {
    self.register_buffer(b.name, b.value);
  }
  for (const auto& child : jit.named_children()) {
    auto m = std::make_shared<JitMirror>();
    mirror(*m, child.value, seen);
    self.register_module(child.name, m);
  }
}

}  // namespace

TorchScriptModel::TorchScriptModel(const std::string& path) : path_(path) {
  UT_CHECK(std::filesystem::is_regular_file(path), "TorchScript file '", path,
           "' not found; export one from Python with torch.jit.script(model).save(path)");
  // Without a GPU, TorchScript's tensor-expression fuser (NNC) stays off, as PyTorch leaves CPU
  // fusion off by default: Debian 13's LibTorch 2.6 stalls for minutes in it from the third
  // training step on (tests/models/torchscript_model_test.cpp), and on the CPU it fuses little.
  if (!torch::cuda::is_available()) torch::jit::setTensorExprFuserEnabled(false);
  try {
    module_ = std::make_unique<torch::jit::Module>(torch::jit::load(path));
  } catch (const c10::Error& e) {
    throw ConfigError(detail::concat(
        "cannot load TorchScript file '", path,
        "' (is it saved with torch.jit.save / ScriptModule.save?): ", e.what_without_backtrace()));
  }
  auto forward = module_->find_method("forward");
  UT_CHECK(forward.has_value(), name(), " has no forward method");
  const auto& args = forward->function().getSchema().arguments();
  max_inputs_ = args.empty() ? 0 : args.size() - 1;  // minus self
  for (size_t i = 1; i < args.size(); ++i) {
    if (!args[i].default_value()) min_inputs_ = i;
  }
  std::unordered_set<const c10::TensorImpl*> seen;
  mirror(*this, *module_, seen);
  train(true);
}

TorchScriptModel::~TorchScriptModel() = default;

std::vector<torch::Tensor> TorchScriptModel::forward_all(const std::vector<torch::Tensor>& inputs) {
  check_input_count(name(), inputs, min_inputs_, max_inputs_);
  std::vector<c10::IValue> args(inputs.begin(), inputs.end());
  c10::IValue out;
  try {
    out = module_->forward(std::move(args));
  } catch (const c10::Error& e) {
    throw ConfigError(detail::concat(name(), ": forward failed on input shape(s) ",
                                     shapes_string(inputs), ": ", e.what_without_backtrace()));
  } catch (const std::runtime_error& e) {
    // The TorchScript interpreter reports an operator failure as a std::runtime_error whose
    // last line is the cause, after the TorchScript traceback.
    std::string text = e.what();
    while (!text.empty() && text.back() == '\n') text.pop_back();
    const auto last_line = text.rfind('\n');
    throw ConfigError(detail::concat(
        name(), ": forward failed on input shape(s) ", shapes_string(inputs), ": ",
        last_line == std::string::npos ? text : text.substr(last_line + 1) + "\n" + text));
  }

  auto expect_tensor = [&](const c10::IValue& v, const std::string& what) {
    UT_CHECK(v.isTensor(), name(), ": forward returned a ", v.tagKind(), " as ", what,
             "; expected a Tensor, a tuple or list of Tensors, or a Dict[str, Tensor]");
    return v.toTensor();
  };
  std::vector<torch::Tensor> result;
  if (out.isTuple()) {
    const auto& elements = out.toTupleRef().elements();
    for (size_t i = 0; i < elements.size(); ++i) {
      result.push_back(expect_tensor(elements[i], "tuple element " + std::to_string(i)));
    }
  } else if (out.isList()) {
    auto list = out.toListRef();
    for (size_t i = 0; i < list.size(); ++i) {
      result.push_back(expect_tensor(list[i], "list element " + std::to_string(i)));
    }
  } else if (out.isGenericDict()) {
    std::vector<std::string> names;
    for (const auto& entry : out.toGenericDict()) {
      UT_CHECK(entry.key().isString(), name(), ": forward returned a dict with a ",
               entry.key().tagKind(), " key; only Dict[str, Tensor] outputs are supported");
      names.push_back(entry.key().toStringRef());
      result.push_back(expect_tensor(entry.value(), "dict value '" + names.back() + "'"));
    }
    prediction_names_ = std::move(names);
  } else {
    result.push_back(expect_tensor(out, "its output"));
  }
  return result;
}

std::vector<std::string> TorchScriptModel::prediction_names() const { return prediction_names_; }

std::vector<std::vector<torch::Tensor>> TorchScriptModel::units() {
  // Its submodules are found (jit_module().children()), but their calls are inside the scripted
  // graph: LibTorch 1.13 runs no hook of a scripted module, so none can be gathered before it
  // runs and released after.
  throw ConfigError(
      "distributed.zero: 3 with model.type: torchscript: the scripted forward runs as one "
      "TorchScript graph, whose calls of its submodules cannot be run one unit at a time (each "
      "gathered just before it runs); use distributed.zero: 2 (optimizer state and gradients "
      "sharded), or a C++ model with units (docs/distributed.md, \"Sharded parameters\")");
}

void TorchScriptModel::train(bool on) {
  torch::nn::Module::train(on);
  module_->train(on);
}

namespace {

struct TorchScriptModelArgs {
  std::string path;
};

}  // namespace

void register_torchscript_model() {
  Options<TorchScriptModelArgs> args;
  args.field("path", &TorchScriptModelArgs::path)
      .required()
      .help("TorchScript file saved from Python (torch.jit.script(model).save(path))");
  model_registry().add(
      "torchscript", "a TorchScript module saved from Python, trained as is", std::move(args),
      [](const TorchScriptModelArgs& a, const Config& at) -> ModelPtr {
        UT_CHECK(std::filesystem::is_regular_file(a.path), at.key_path("path"),
                 ": TorchScript file '", a.path,
                 "' not found; export one from Python with torch.jit.script(model).save(path)");
        return std::make_shared<TorchScriptModel>(a.path);
      });
  register_torchscript_export<TorchScriptModel>(
      "torchscript", [](const TorchScriptModel& m) { return m.jit_module().clone(); });
}

}  // namespace unitrain::models
